"""The real size without the real compute (issue 29): the module is built and run on the meta device
(shapes, dtypes, bytes and flops at the size the module states, no memory taken, nothing computed),
and when that size is too costly for the CPU the checks and the trace run at a small size instead:
the module's own size constants (its module-level integers) scaled down.

Which constants are scaled, in two tiers tried in order:
  A. the integers (and tuples/lists of them) that get_inputs() reads and nothing else in the module
     does: batch, spatial and sequence sizes. The model's state keeps its shapes, so the draws
     fitted to it hold at the real size;
  B. every module-level integer above SMALLEST (channels, features, hidden sizes too): the state
     shrinks with them, and a draw fitted to a shrunk parameter is refitted where the rule was
     PyTorch's default init (its bound follows the real fan-in).
A candidate size is kept only if the module builds and runs on the meta device there and fits the
CPU budget. The trace is taken at the smallest candidate S1 and verified, beside the usual fresh
draws at S1, at a second candidate S2 in which every scaled constant has another value: a value the
trace froze (a size constant read in forward, a group count) differs there and shows. The artifact
is then run on the meta device at the real size, and its output shapes must be the module's.
A module whose trace every tier refutes at S2 or at the real size is traced at its own size on the
meta device instead (tier M, trace_on_meta; classify.traced_on_meta checks the same procedure at S1
and S2 on the CPU). What stays for the GPU stage: the values at the real size."""
import contextlib
import dataclasses
import math
import re
import time

import torch

from .common import Skip, one_line
from .cost import CostRun, tensor_bytes
from .loading import Timeout, seed_all, time_limit
from .running import as_outputs

# Names of constants tier B leaves alone: counts and windows a trace keeps as numbers (a group
# count, a kernel size), which a trace at another value would get wrong at the real size. The
# second size catches what this misses.
HYPER = re.compile(r"group|kernel|stride|pad|dilation|head|window|pool|scale|factor")
SMALLEST = 8              # a scaled constant goes no lower (kernel sizes, strides, small counts stay)
DIVISORS = (4096, 1024, 256, 64, 16, 4, 2)
CPU_BYTES = 256 << 20     # arguments and outputs of a size the CPU runs the checks at
CPU_FLOPS = 2e9           # flops of one forward at a size the CPU runs the checks at
# A forward on the meta device past this is given up (recurrent layers at long sequences: their
# meta kernels step in Python, minutes per forward); its output shapes then follow from S1 and S2.
META_FORWARD_S = 15.0
SLOW_META = f"the meta device's forward took more than {META_FORWARD_S:g} s"
# All of one module's meta forwards together (plans() starts the count): past it, the remaining
# candidate sizes are not run (38_LSTMBidirectional spent 235 s probing sizes at 15 s each, issue 29).
META_MODULE_S = 45.0
SPENT_META = f"not run: the module's meta-device forwards took {META_MODULE_S:g} s in all"
_meta_spent = [0.0]  # seconds the current module's meta forwards took so far
# Past these, a module no smaller size of which builds is not run on the CPU at all (too_large).
CPU_MAX_BYTES = 2 << 30
CPU_MAX_FLOPS = 100e9


@dataclasses.dataclass
class Probe:
    """The module at one size, on the meta device."""
    values: dict                 # the constants set ({} for the module as written)
    model: object = None         # the model on the meta device
    error: str = ""              # why it does not build or run there ("" when it does)
    inputs: list = None          # get_inputs() entries: tensors (meta) or Python scalars
    state: dict = None           # state_dict entries (meta)
    outputs: list = None         # [(shape, dtype)] or None when forward failed on meta
    forward_error: str = ""
    flops: object = None         # int, or None when uncounted or unknown
    uncounted: tuple = ()

    @property
    def arg_bytes(self):
        return sum(tensor_bytes(t) for t in self.inputs if isinstance(t, torch.Tensor)) + \
            sum(tensor_bytes(t) for t in self.state.values())

    @property
    def out_bytes(self):
        return sum(math.prod(s) * torch.empty((), dtype=d).element_size() for s, d in self.outputs or [])

    def cheap(self):
        """Whether the CPU runs the checks at this size within its budget."""
        if self.outputs is None:
            return self.arg_bytes <= CPU_BYTES // 4
        return self.arg_bytes + self.out_bytes <= CPU_BYTES and (self.flops is None or self.flops <= CPU_FLOPS)

    def affordable(self):
        """Whether the CPU can run the checks at this size at all (slowly)."""
        return self.outputs is not None and self.arg_bytes + self.out_bytes <= CPU_MAX_BYTES and \
            (self.flops or 0) <= CPU_MAX_FLOPS


@dataclasses.dataclass
class SizePlan:
    real: Probe
    constants: dict = None  # the module's own values of the scaled constants
    small: Probe = None   # S1: the checks and the trace run here (None: at the real size)
    second: Probe = None  # S2: the trace is verified here too (None: no second size found)
    tier: str = ""


@contextlib.contextmanager
def constants_set(module, values):
    """The module's globals in `values` set for the duration (forward reads them at call time)."""
    saved = {k: module.__dict__[k] for k in values}
    module.__dict__.update(values)
    try:
        yield
    finally:
        module.__dict__.update(saved)


def probe(module, seed, values):
    """Builds the model and its inputs on the meta device with `values` set, runs forward there."""
    p = Probe(values=dict(values))
    with constants_set(module, values):
        try:
            model, p.inputs = meta_build(module, seed)
            p.model, p.state = model, {k: v.detach() for k, v in model.state_dict().items()}
        except Exception as e:  # noqa: BLE001  (the CPU build reports what is wrong)
            p.error = f"{type(e).__name__}: {one_line(e, 200)}"
            return p
        if any(isinstance(t, torch.Tensor) and t.device.type != "meta" for t in [*p.inputs, *p.state.values()]):
            p.error = "the module makes tensors on a device of its own"
            return p
        left = min(META_FORWARD_S, META_MODULE_S - _meta_spent[0])
        if left <= 0:
            p.forward_error = SPENT_META
            return p
        start = time.monotonic()
        try:
            with time_limit(left), torch.device("meta"), torch.no_grad(), CostRun() as c:
                outs = as_outputs(model(*p.inputs))
            p.outputs = [(tuple(t.shape), t.dtype) for t in outs]
            p.flops, p.uncounted = c.flops, tuple(sorted(c.recorder.uncounted))
        except Timeout:
            p.forward_error = SLOW_META if left >= META_FORWARD_S else SPENT_META
        except Skip as s:
            p.forward_error = s.detail
        except Exception as e:  # noqa: BLE001  (ops without a meta kernel, .item())
            p.forward_error = f"{type(e).__name__}: {one_line(e, 200)}"
        finally:
            _meta_spent[0] += time.monotonic() - start
    return p


def meta_build(module, seed):
    """(model, get_inputs() entries) built on the meta device, seeded as the CPU build is."""
    seed_all(seed)
    with torch.device("meta"):
        model = module.Model(*module.get_init_inputs())
        seed_all(seed + 1)
        return model, list(module.get_inputs())


def trace_on_meta(module, seed, values):
    """(artifact bytes, tracer warnings): the module built afresh on the meta device with `values`
    set ({} for its own size) and traced there (artifact.trace_on_meta), nothing computed: tier M.
    A failure is a trace_mismatch naming the size."""
    from . import artifact
    from .running import WithScalars
    at = describe(values) or "the module's own size"
    with constants_set(module, values):
        try:
            model, entries = meta_build(module, seed)
        except Exception as e:  # noqa: BLE001  (it built there for the probe: a module that differs each time)
            raise Skip("trace_mismatch", f"building on the meta device at {at} failed: {type(e).__name__}: "
                       f"{one_line(e, 200)}") from None
        inputs = [t for t in entries if isinstance(t, torch.Tensor)]
        if len(inputs) != len(entries):
            model = WithScalars(model, entries)
        state = {k: v.detach() for k, v in model.state_dict().items()}
        try:
            return artifact.trace_on_meta(model, len(inputs), list(state), [*inputs, *state.values()])
        except Skip as e:
            raise Skip(e.reason, f"at {at}: {e.detail}") from None


def _int_like(v):
    if isinstance(v, bool):
        return False
    if isinstance(v, int):
        return True
    return isinstance(v, (tuple, list)) and len(v) > 0 and all(isinstance(x, int) and not isinstance(x, bool) for x in v)


def size_constants(tree, module):
    """(tier A names, tier B names): module-level integer constants (or tuples/lists of them) above SMALLEST."""
    import ast
    reads_inputs, reads_other = set(), set()
    for node in tree.body:
        target = reads_inputs if isinstance(node, ast.FunctionDef) and node.name == "get_inputs" else reads_other
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            node = node.value  # a constant defined from another is read by its definition only
            if node is None:
                continue
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                target.add(n.id)
    big = {k for k, v in module.__dict__.items()
           if not k.startswith("__") and _int_like(v) and max(v if isinstance(v, (tuple, list)) else [v]) > SMALLEST}
    tier_a = sorted(k for k in big if k in reads_inputs and k not in reads_other)
    tier_b = sorted(k for k in big if (k in reads_inputs or k in reads_other) and not HYPER.search(k.lower()))
    return tier_a, tier_b


def scaled(v, d, floor):
    if isinstance(v, (tuple, list)):
        return type(v)(scaled(x, d, floor) for x in v)
    return v if v <= floor else max(floor, -(-v // d))


def candidates(module, names, floor):
    """The constants at each divisor, smallest first, without repeats."""
    out, seen = [], set()
    for d in DIVISORS:
        values = {k: scaled(module.__dict__[k], d, floor) for k in names}
        key = tuple(sorted((k, repr(v)) for k, v in values.items()))
        if key not in seen and any(values[k] != module.__dict__[k] for k in names):
            seen.add(key)
            out.append(values)
    return out


def differs_everywhere(a, b, real):
    """Every constant S1 scaled has another value in S2."""
    return all(b.get(k, real[k]) != v for k, v in a.items() if v != real[k])


def grown(values, real, how):
    """S1's constants moved towards the real ones: doubled, or one more (capped at the real value)."""
    def one(v, r):
        if isinstance(v, (tuple, list)):
            return type(v)(one(x, y) for x, y in zip(v, r))
        return min(r, 2 * v if how == "double" else v + 1)
    return {k: one(v, real[k]) for k, v in values.items()}


def fits(p, real, same_state, affordable):
    """Whether probe p is a small size the checks can run at in place of the real one."""
    if p.error or p.outputs is None or not affordable(p) or len(p.inputs) != len(real.inputs):
        return False
    if [type(t) for t in p.inputs] != [type(t) for t in real.inputs] or list(p.state) != list(real.state):
        return False
    return not same_state or [tuple(t.shape) for t in p.state.values()] == [tuple(t.shape) for t in real.state.values()]


def small_sizes(module, seed, real, names, same_state, floor=SMALLEST, affordable=Probe.cheap, tries=2):
    """(S1, S2) pairs for one tier, at most `tries`: S1 a candidate that fits, smallest first (a
    later one when the CPU refuses an earlier: a kernel wider than the input, which the meta device
    lets pass), S2 one in which every constant S1 scaled has another value (S1's doubled, or plus
    one, or a larger candidate; None when none fits)."""
    ladder = candidates(module, names, floor)
    consts = {k: module.__dict__[k] for k in names}
    order = None
    if floor == 1:  # the last resort: each constant alone too (a batch shrinks where 224x224 must stay), cheapest first
        for k in names:
            ladder += [v for v in candidates(module, [k], floor) if v not in ladder]
        probes = [probe(module, seed, v) for v in ladder]
        fitting = [p for p in probes if fits(p, real, same_state, affordable)]
        order = sorted(fitting, key=lambda p: (p.flops or 0, p.arg_bytes + p.out_bytes))
    for i, values in enumerate(ladder if order is None else [p.values for p in order]):
        if tries <= 0:
            return
        s1 = probe(module, seed, values) if order is None else order[i]
        if not fits(s1, real, same_state, affordable):
            continue
        tries -= 1
        s2 = None
        later = ladder[i + 1:] if order is None else [p.values for p in order[i + 1:]]
        for other in [grown(values, consts, "double"), grown(values, consts, "plus one"), *later]:
            if differs_everywhere(values, other, module.__dict__):
                p = probe(module, seed, other)
                if fits(p, real, same_state, affordable):
                    s2 = p
                    break
        yield s1, s2


def plans(module, tree, seed):
    """Where the checks may run, best first: the real size when the CPU affords it (the only plan),
    else a small size per tier that has one (a trace that S2 or the meta run refutes at one tier may
    hold at the next), else the real size (check_real_size decides whether the CPU may run it)."""
    _meta_spent[0] = 0.0  # the budget is per module
    real = probe(module, seed, {})
    if real.error or (real.cheap() and real.flops is not None):
        yield SizePlan(real=real)
        return
    tier_a, tier_b = size_constants(tree, module)
    tiers = [("A", tier_a, True, SMALLEST, Probe.cheap), ("B", tier_b, False, SMALLEST, Probe.cheap),
             # the last resort: get_inputs' own sizes down to 1, at a cost the CPU still affords (a fixed
             # 224x224 image: the batch alone can shrink)
             ("A1", tier_a, True, 1, Probe.affordable)]
    found = False
    for tier, names, same_state, floor, affordable in tiers:
        if names and (tier != "B" or names != tier_a):
            for s1, s2 in small_sizes(module, seed, real, names, same_state, floor, affordable):
                found = True
                yield SizePlan(real=real, small=s1, second=s2, tier=tier, constants={k: module.__dict__[k] for k in names})
    if not found or real.cheap():  # (flops unknown: the real size when its bytes are cheap, if no small size holds)
        yield SizePlan(real=real)


def describe(values):
    return ", ".join(f"{k}={v}" for k, v in sorted(values.items()))


def artifact_shapes_on_meta(data, real):
    """The artifact's output (shape, dtype) at the real size, run on the meta device (nothing computed);
    or raises Skip trace_mismatch."""
    import io
    loaded = torch.jit.load(io.BytesIO(data), map_location="cpu")
    args = [torch.empty(t.shape, dtype=t.dtype, device="meta")
            for t in [*(t for t in real.inputs if isinstance(t, torch.Tensor)), *real.state.values()]]
    try:
        with torch.no_grad():
            got = loaded(*args)
    except Exception as e:  # noqa: BLE001
        return None, f"{type(e).__name__}: {one_line(e, 200)}"
    return [(tuple(g.shape), g.dtype) for g in got], ""


def at_real_size(analysis, sized, draw_bound, refuted=None):
    """The Analysis made at the small size S1, restated at the module's own size: argument and output
    shapes, flops and bytes from the meta run; draws of PyTorch's default init refitted to the real
    fan-in (`draw_bound(model, name, tensor)`, draws.module_bound). `refuted`: why the trace taken at
    S1 failed, when analysis.artifact is instead the trace on the meta device at the module's own
    size (tier M, classify.traced_on_meta)."""
    real = sized.real
    if real.forward_error == SLOW_META:  # the artifact's meta run would be as slow
        shapes, err = inferred_shapes(sized), "not run: " + SLOW_META
    else:
        shapes, err = artifact_shapes_on_meta(analysis.artifact, real)
    if real.outputs is not None and shapes is not None and shapes != real.outputs:
        raise Skip("trace_mismatch", f"at the module's size the artifact gives {fmt(shapes)} on the meta device, "
                   f"the module {fmt(real.outputs)}: the trace froze a size")
    outputs = real.outputs if real.outputs is not None else shapes
    if outputs is None:
        raise Skip("load_error", "the output shapes at the module's size are unknown: forward fails on the meta "
                   f"device ({real.forward_error}) and so does the artifact ({err})")
    tensors = iter(t for t in real.inputs if isinstance(t, torch.Tensor))
    refit = []
    for a in analysis.arguments:
        t = next(tensors) if a["role"] == "input" else real.state[a["name"]]
        if a["role"] != "input" and list(t.shape) != a["shape"] and analysis.rules.get(a["name"]) == "torch default init":
            b = draw_bound(real.model, a["name"], t)
            if b is not None:
                a["draw"] = {"dist": "uniform", "low": -b, "high": b}
                refit.append(a["name"])
        a["shape"] = list(t.shape)
    for o, (shape, dtype) in zip(analysis.outputs, outputs):
        o["shape"] = list(shape)
    analysis.flops = real.flops
    analysis.min_bytes = real.arg_bytes + sum(math.prod(s) * torch.empty((), dtype=d).element_size() for s, d in outputs)
    notes = [n for n in analysis.notes if not n.startswith("flops omitted")]
    if real.uncounted:
        notes.append("flops omitted: uncounted ops " + ", ".join(real.uncounted))
    elif real.flops is None:
        notes.append(f"flops omitted: forward fails on the meta device ({real.forward_error})")
    if refuted is None:
        second = f"; the trace verified again at {describe(sized.second.values)}" if sized.second else \
            "; no second small size found: the trace verified at one size only"
        notes.append(f"checked and traced at a small size (tier {sized.tier}: {describe(sized.small.values)}){second}; "
                     "the task states the module's own size, whose values the GPU stage checks")
        analysis.trace_tier = sized.tier
    else:
        sizes = describe(sized.small.values) + (f" and {describe(sized.second.values)}" if sized.second else "")
        notes.append(f"traced on the meta device at the module's own size (tier M), no value computed there: the "
                     f"trace at a small size (tier {sized.tier}: {describe(sized.small.values)}) was refuted ({one_line(refuted, 240)}); "
                     f"checked at that small size, and the same meta-device trace taken at {sizes} matched eager "
                     "there; the GPU stage must validate the artifact's values at the module's own size")
        analysis.trace_tier = "M"
    if refit:
        notes.append("default-init draws refitted to the real fan-in: " + ", ".join(refit))
    analysis.notes = notes
    return analysis


def inferred_shapes(sized):
    """The output shapes at the real size from S1's and S2's (None when they do not tell): an extent
    the same at both stays; one that follows a scaled constant (its S1 and S2 values, and no other's)
    takes its real value."""
    s1, s2 = sized.small, sized.second
    if s2 is None or s1.outputs is None or s2.outputs is None or len(s1.outputs) != len(s2.outputs):
        return None
    ints = {k: (v, s2.values[k]) for k, v in s1.values.items() if isinstance(v, int)}
    out = []
    for (a, dtype), (b, _) in zip(s1.outputs, s2.outputs):
        if len(a) != len(b):
            return None
        shape = []
        for x, y in zip(a, b):
            if x == y:
                shape.append(x)
                continue
            hits = [k for k, pair in ints.items() if pair == (x, y)]
            if len(hits) != 1:
                return None
            shape.append(sized.constants[hits[0]])
        out.append((tuple(shape), dtype))
    return out


def fmt(shapes):
    return ", ".join(str(list(s)) for s, _ in shapes)
