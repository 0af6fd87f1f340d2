"""An imported task's other shapes (issue 30; TASK_FORMAT.md "Imported tasks", `extra_shapes`).

A candidate right only at the task's own size is no kernel for the operator. For a module whose
trace was taken at a small size of its tier A constants (sizing.py: the integers only get_inputs()
reads, so the model and its state are the same at every value), the artifact already held at two
sizes, S1 and S2. Its other shapes are more values of the same constants, each kept only where the
module builds there on the meta device with the state's shapes unchanged, within the CPU's budget,
and where the artifact matches the module's eager forward on fresh draws (classify.check_second_size,
the S2 check):
  odd        every constant of S1 made odd (one more where even): no multiple of 2, 8, ... 128
  batch_one  the batch constant (a name holding "batch") at 1, the others at S1
The shapes are small by construction: the task's own tolerance, set at its own size, holds where a
reduction is shorter. Modules traced at their own size (tier "module"), at a tier B size (the state
shrinks) or on the meta device (tier M) get none: nothing shows their trace holds at another size."""
import torch

from . import sizing
from .loading import Timeout


def _odd(v):
    if isinstance(v, (tuple, list)):
        return type(v)(_odd(x) for x in v)
    return v if v % 2 else v + 1


def _flat(values):
    """The constants as extra_dims shows them: integers, a tuple's entries as NAME_0, NAME_1, ..."""
    out = {}
    for k, v in sorted(values.items()):
        if isinstance(v, (tuple, list)):
            out.update({f"{k}_{i}": int(x) for i, x in enumerate(v)})
        else:
            out[k] = int(v)
    return out


def candidates(sized):
    """(kind, values) to try, from S1's values: the odd one, then batch one where a batch constant is."""
    s1 = sized.small.values
    out = [("odd", {k: _odd(v) for k, v in s1.items()})]
    batch = sorted(k for k, v in s1.items() if "batch" in k.lower() and isinstance(v, int) and not isinstance(v, bool))
    if batch:
        out.append(("batch_one", {**s1, batch[0]: 1}))
    seen = [s1] + ([sized.second.values] if sized.second is not None else [])
    kept = []
    for kind, values in out:
        if values not in seen:
            seen.append(values)
            kept.append((kind, values))
    return kept


def other_shapes(module, sized, model, analysis, opts, check):
    """The task's `extra_shapes` ([] where none holds); `check(module, probe, analysis, opts, model)`
    raises Skip where the artifact differs from eager at the probe's size (classify.check_second_size).
    Each entry: {kind, constants, inputs (the tensor entries of get_inputs(), in order), outputs}."""
    if sized.small is None or sized.tier not in ("A", "A1"):
        return []
    n_inputs = sum(1 for a in analysis.arguments if a["role"] == "input")
    out = []
    for kind, values in candidates(sized):
        p = sizing.probe(module, opts.seed, values)
        if not sizing.fits(p, sized.real, True, sizing.Probe.cheap):
            continue
        inputs = [list(t.shape) for t in p.inputs if isinstance(t, torch.Tensor)]
        outputs = [list(shape) for shape, _ in p.outputs]
        if len(inputs) != n_inputs or len(outputs) != len(analysis.outputs):
            continue
        if any(len(a) != len(b["shape"]) for a, b in zip(outputs, analysis.outputs)):
            continue
        try:
            check(module, p, analysis, opts, model)
        except Timeout:
            raise
        except Exception:  # noqa: BLE001  (Skip, or the module failing there: not one of its shapes)
            continue
        out.append({"kind": kind, "constants": _flat(values), "inputs": inputs, "outputs": outputs})
    return out


def note(shapes):
    if not shapes:
        return None
    return "other shapes (extra_shapes, checked against eager): " + "; ".join(
        f"{s['kind']} at " + ", ".join(f"{k}={v}" for k, v in s["constants"].items()) for s in shapes)

