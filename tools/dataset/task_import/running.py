"""Calling a model with its state (the state_dict entries) replaced by given tensors, the way
torch.func.functional_call does, but also while tracing (the stateless API refuses the tracer);
its outputs as a tuple of tensors; the comparisons the checks use."""
import contextlib

import torch

from .common import Skip


@contextlib.contextmanager
def state_swapped(model, state):
    """Inside, model's parameters and buffers named in `state` are the given tensors (in-place updates,
    BatchNorm's running statistics in train mode, land in them); restored on exit."""
    saved = []
    try:
        for name, t in state.items():
            prefix, _, attr = name.rpartition(".")
            mod = model.get_submodule(prefix) if prefix else model
            table = mod._parameters if attr in mod._parameters else mod._buffers
            if attr not in table:
                raise KeyError(f"state_dict entry {name} is neither a parameter nor a buffer of its module")
            saved.append((table, attr, table[attr]))
            table[attr] = t
        yield
    finally:
        for table, attr, old in reversed(saved):
            table[attr] = old


class WithScalars(torch.nn.Module):
    """A model whose get_inputs() also returned Python scalars (float, int, bool): forward takes the
    tensors alone and puts each scalar back at its place. It shares the model's parameter, buffer
    and submodule tables (the same state_dict keys, and state_swapped reaches them), so the scalars
    become constants of the trace: the reference is called with them as the module was."""

    def __init__(self, model, entries):
        super().__init__()
        object.__setattr__(self, "_model", model)
        self._parameters, self._buffers, self._modules = model._parameters, model._buffers, model._modules
        self._non_persistent_buffers_set = model._non_persistent_buffers_set
        self.training = model.training
        self.scalars = {i: v for i, v in enumerate(entries) if not isinstance(v, torch.Tensor)}
        self.n_entries = len(entries)

    def forward(self, *tensors):
        it = iter(tensors)
        return self._model(*[self.scalars[i] if i in self.scalars else next(it) for i in range(self.n_entries)])


def call(model, inputs, state):
    """model(*inputs) with `state`, under no_grad, on copies (the arguments stay as they are)."""
    inputs = [t.clone() for t in inputs]
    state = {k: v.detach().clone() for k, v in state.items()}
    with torch.no_grad(), state_swapped(model, state):
        return model(*inputs)


def as_outputs(raw):
    """The outputs as a tuple of tensors: a tensor, or a tuple/list of tensors; else non_tensor_output."""
    if isinstance(raw, torch.Tensor):
        return (raw,)
    if isinstance(raw, (tuple, list)) and raw and all(isinstance(t, torch.Tensor) for t in raw):
        return tuple(raw)
    what = type(raw).__name__
    if isinstance(raw, (tuple, list)):
        what += " of " + ", ".join(sorted({type(t).__name__ for t in raw})) if raw else " (empty)"
    raise Skip("non_tensor_output", f"forward returns {what}, not a tensor or a tuple of tensors")


def same(a, b):
    """Bitwise-equal values (NaN equal to NaN), same shape and dtype."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.is_floating_point() or a.is_complex():
        return bool(((a == b) | (torch.isnan(a) & torch.isnan(b))).all())
    return bool(torch.equal(a, b))


def within(out, ref, atol, rtol):
    """kforge's rule (data_synth/reference/tolerance.h): |out - ref| <= atol + rtol |ref| where both are finite,
    else equal (the same infinity) or both NaN. Returns (ok, worst |out - ref| over finite pairs).
    Held to the C++ by tests/golden/tolerance.json (tests/tools/test_golden_tolerance.py)."""
    if out.shape != ref.shape or out.dtype != ref.dtype:
        return False, float("inf")
    if not out.is_floating_point():
        return bool(torch.equal(out, ref)), 0.0
    o, r = out.double(), ref.double()
    finite = torch.isfinite(o) & torch.isfinite(r)
    diff = (o - r).abs()
    ok_finite = diff <= atol + rtol * r.abs()
    ok_other = (o == r) | (torch.isnan(o) & torch.isnan(r))
    ok = torch.where(finite, ok_finite, ok_other)
    worst = float(diff[finite].max()) if bool(finite.any()) else 0.0
    return bool(ok.all()), worst
