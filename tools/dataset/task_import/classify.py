"""The checks that decide whether a module becomes a task, in the order they run. Each failure
raises Skip with its reason code; a module that passes comes back as an Analysis (everything the
task file needs)."""
import ast
import dataclasses

import torch

from . import artifact, draws, other_shapes, sizing
from .common import FLOAT_DTYPES, Skip, dtype_name, one_line
from .cost import CostRun, tensor_bytes
from .loading import Timeout, custom_cuda_use, cuda_device_use, load_module, network_use, parse, seed_all, time_limit
from .running import WithScalars, as_outputs, call, same


@dataclasses.dataclass
class Options:
    seed: int = 0
    max_bytes: int = int(139 * (1 << 30) // 4)
    timeout_s: float = 300.0
    memory_mb: int = 16384  # the worker's address space (isolation.py, sandbox.py)
    max_processes: int = 256  # the worker's RLIMIT_NPROC
    tolerance: dict = None  # {"atol", "rtol"} of the profile, by dtype name


@dataclasses.dataclass
class Analysis:
    module_mode: str
    arguments: list     # [{name, role, shape, dtype, draw}]
    outputs: list       # [{name, shape, dtype}]
    dtype: str
    flops: object       # int or None
    min_bytes: int
    artifact: bytes
    description: str
    notes: list
    rules: dict = None  # the rule each argument's draw came from (draws.infer)
    init_inputs: list = None  # get_init_inputs() at the module's size, when all are bools and numbers
    # where the artifact was traced (DIR/imported.jsonl): "module" at the module's own size on the CPU;
    # "A", "B", "A1" at a small size (sizing.py's tiers); "M" on the meta device at the module's own
    # size (no values: the GPU stage must validate the artifact there)
    trace_tier: str = "module"
    trace_notes: list = None  # the notes of the trace itself (tracer warnings, device constants)
    extra_shapes: list = None  # the task's other shapes (other_shapes.py), each checked against eager


def describe(tree, item):
    """The Model class's docstring (first line), else None."""
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            doc = ast.get_docstring(node)
            if doc and doc.strip():
                return one_line(doc.strip().splitlines()[0], 200)
    return None


def get_inputs_text(tree, source):
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "get_inputs":
            return ast.get_source_segment(source, node) or ""
    return ""


SCALARS = (bool, int, float)


def entries_of(value, what):
    """get_inputs()'s entries: tensors, and Python scalars (bool, int, float) that the model takes as
    they are (running.WithScalars)."""
    if not isinstance(value, (list, tuple)):
        raise Skip("load_error", f"{what} returns {type(value).__name__}, not a list")
    for i, v in enumerate(value):
        if not isinstance(v, (torch.Tensor, *SCALARS)):
            raise Skip("load_error", f"{what} entry {i} is {type(v).__name__}: only tensors and Python scalars "
                       "(bool, int, float) are supported")
    return list(value)


def scalars_note(model):
    if not isinstance(model, WithScalars):
        return None
    return ("scalar argument(s) of get_inputs() passed to the reference as constants of the artifact: "
            + ", ".join(f"x{i} = {v!r}" for i, v in sorted(model.scalars.items())))


def check_tensor(name, t, cuda_note):
    if t.device.type != "cpu":
        raise Skip("load_error", f"{name} is on {t.device}: the module builds tensors on the GPU itself"
                   + (f" ({cuda_note})" if cuda_note else ""))
    if dtype_name(t.dtype) is None:
        raise Skip("unsupported_dtype", f"{name} is {str(t.dtype).replace('torch.', '')} "
                   "(tasks hold float32, float16, bfloat16, int32, int64, bool)")


def build(module, seed, cuda_note):
    """(model, inputs, second inputs, state, roles). Failures are load errors."""
    try:
        seed_all(seed)
        init = module.get_init_inputs()
        if not isinstance(init, (list, tuple)):
            raise Skip("load_error", f"get_init_inputs() returns {type(init).__name__}, not a list")
        seed_all(seed)
        model = module.Model(*init)
        if not isinstance(model, torch.nn.Module):
            raise Skip("load_error", f"Model(...) is a {type(model).__name__}, not an nn.Module")
        seed_all(seed + 1)
        entries = entries_of(module.get_inputs(), "get_inputs()")
        seed_all(seed + 2)
        entries_b = entries_of(module.get_inputs(), "get_inputs()")
    except (Skip, Timeout):
        raise
    except Exception as e:
        raise Skip("load_error", f"building the model or its inputs failed: {type(e).__name__}: {one_line(e)}"
                   + (f" (the source {cuda_note})" if cuda_note else "")) from None

    def layout(es):
        return [(t.shape, t.dtype) if isinstance(t, torch.Tensor) else (type(t), t) for t in es]
    if layout(entries) != layout(entries_b):
        raise Skip("load_error", "get_inputs() gives other shapes, dtypes or scalars on each call")
    inputs = [t for t in entries if isinstance(t, torch.Tensor)]
    inputs_b = [t for t in entries_b if isinstance(t, torch.Tensor)]
    if len(inputs) != len(entries):
        model = WithScalars(model, entries)
    state = {k: v.detach() for k, v in model.state_dict().items()}
    params = {n for n, _ in model.named_parameters(remove_duplicate=False)}
    roles = {k: "parameter" if k in params else "buffer" for k in state}
    return model, inputs, inputs_b, state, roles


def run(model, inputs, state, seed, what, cuda_note=None):
    seed_all(seed)
    try:
        raw = call(model, inputs, state)
    except (Skip, Timeout):
        raise
    except Exception as e:
        raise Skip("load_error", f"forward failed on {what}: {type(e).__name__}: {one_line(e)}"
                   + (f" (the source {cuda_note})" if cuda_note else "")) from None
    return as_outputs(raw)


def argument_list(inputs, state, roles):
    args = [(f"x{i}", "input", t) for i, t in enumerate(inputs)]
    return args + [(k, roles[k], v) for k, v in state.items()]


def check_outputs(outs, cuda_note):
    for i, t in enumerate(outs):
        check_tensor(f"output y{i}", t, cuda_note)


def fresh_draws(specs, tensors, seed, k):
    gen = torch.Generator().manual_seed(seed * 1000 + k)
    return [draws.sample(a["draw"], tuple(a["shape"]), t.dtype, gen) for a, t in zip(specs, tensors)]


@dataclasses.dataclass
class Subject:
    """One module under examination: what was built from it, and what the checks found so far."""
    tree: object
    item: object
    model: object
    inputs: list
    inputs_b: list      # a second get_inputs() draw
    state: dict
    roles: dict
    cuda_note: object
    opts: Options
    args: list = None   # [(name, role, tensor)]
    outs: tuple = None  # outputs on the first draw
    outs_b: tuple = None  # outputs on the second get_inputs() draw
    notes: list = dataclasses.field(default_factory=list)
    cost: object = None

    def eager(self, a):
        n = len(self.inputs)
        return run(self.model, a[:n], dict(zip([k for k, _, _ in self.args[n:]], a[n:])), self.opts.seed + 3, "fresh draws")


def analyze(item, module_name, opts):
    if item.level == 4:
        raise Skip("needs_network", "KernelBench level 4 builds Hugging Face models by name (from_pretrained): "
                   "it needs the hub's network and weights, which an import does not fetch")
    tree = parse(item)
    why = custom_cuda_use(tree)
    if why:
        raise Skip("custom_cuda", f"the reference {why}")
    why = network_use(tree)
    if why:
        raise Skip("needs_network", f"the module {why}: it needs a model hub's network and weights")
    cuda_note = cuda_device_use(tree)
    module = load_module(item, module_name, opts.timeout_s)
    phase = "building the model"
    try:
        with time_limit(opts.timeout_s):
            refuted, checked = [], None
            for sized in sizing.plans(module, tree, opts.seed):
                check_real_size(sized, opts)
                if sized.small is None:
                    s = Subject(tree, item, *build(module, opts.seed, cuda_note), cuda_note=cuda_note, opts=opts)
                    phase = "running the model"
                    return with_init_inputs(examine(s), module)
                try:
                    with sizing.constants_set(module, sized.small.values):
                        s = Subject(tree, item, *build(module, opts.seed, cuda_note), cuda_note=cuda_note, opts=opts)
                        phase = "running the model"
                        analysis = examine(s)
                    try:
                        return with_init_inputs(at_real_size(module, sized, s, analysis, opts, cuda_note), module)
                    except Skip as e:  # checked at S1, its trace refuted at S2 or at the real size: tier M's start
                        if e.reason == "trace_mismatch" and checked is None:
                            checked = (sized, s, analysis, e.detail)
                        raise
                except Skip as e:  # a small size the CPU refuses, or a trace S2 or the meta run refutes: the next
                    if e.reason not in ("trace_mismatch", "load_error"):
                        raise
                    refuted.append((e.reason, f"tier {sized.tier} ({sizing.describe(sized.small.values)}): {e.detail}"))
            if checked is not None:  # the last resort: traced at the module's own size on the meta device
                try:
                    return with_init_inputs(traced_on_meta(module, *checked, opts, cuda_note), module)
                except Skip as e:
                    if e.reason not in ("trace_mismatch", "load_error"):
                        raise
                    refuted.append((e.reason, f"tier M (traced on the meta device at the module's size): {e.detail}"))
            reason = "trace_mismatch" if any(r == "trace_mismatch" for r, _ in refuted) else "load_error"
            raise Skip(reason, "at every small size tried: " + "; ".join(d for _, d in refuted))
    except Timeout:
        reason = "load_error" if phase == "building the model" else "too_large"
        raise Skip(reason, f"{phase} did not finish in {opts.timeout_s:g} s on the CPU") from None


def with_init_inputs(analysis, module):
    """The Analysis with get_init_inputs() at the module's own size (outside any small size) as the
    task's init_inputs, when every value is a bool, an int or a float; else a note says why none."""
    try:
        values = list(module.get_init_inputs())
    except Timeout:
        raise
    except Exception as e:  # it ran at the traced size; at the module's own it is the module's business
        analysis.notes.append(f"init_inputs not recorded: get_init_inputs() failed: {type(e).__name__}: {one_line(e)}")
        return analysis
    kinds = sorted({type(v).__name__ for v in values if not isinstance(v, (bool, int, float))})
    if kinds:
        analysis.notes.append("init_inputs not recorded: get_init_inputs() holds " + ", ".join(kinds)
                              + " (an extension's ModelNew needs defaults)")
    elif values:
        analysis.init_inputs = values
    return analysis


def at_real_size(module, sized, s, analysis, opts, cuda_note):
    """The Analysis made at the small size S1, verified at S2 and restated at the module's size."""
    if sized.second is not None:
        # tier A scales what get_inputs() alone reads: the model built at S1 is the one S2 would build
        check_second_size(module, sized.second, analysis, opts, cuda_note, s.model if sized.tier != "B" else None)
        # a trace verified at two sizes: its other shapes (issue 30), each checked the same way
        analysis.extra_shapes = other_shapes.other_shapes(
            module, sized, s.model, analysis, opts,
            lambda m, probe, a, o, model: check_second_size(m, probe, a, o, cuda_note, model))
    result = sizing.at_real_size(analysis, sized, draws.module_bound)
    shapes_note = other_shapes.note(analysis.extra_shapes)
    if shapes_note:
        result.notes.append(shapes_note)
    return result


def traced_on_meta(module, sized, s, analysis, refuted, opts, cuda_note):
    """Tier M (issue 29): the module checked at S1 (s, analysis), its trace there refuted at S2 or at
    the real size (`refuted`): a module whose trace keeps sizes it computes (an einops rearrange, a
    plain tensor attribute of the batch's size) holds at the size it was traced at only. It is traced
    again on the meta device at the module's own size (sizing.trace_on_meta: no values, nothing
    computed). The same procedure at S1 and at S2 (traced on the meta device there, run on the CPU)
    must match eager on the task's draws, and the artifact's output shapes at the real size the
    module's (sizing.at_real_size). The values at the real size are the GPU stage's to validate."""
    real = sized.real
    if real.outputs is None:
        raise Skip("trace_mismatch", f"not tried: forward fails on the meta device at the module's size ({real.forward_error})")
    tolerance, trace_notes = opts.tolerance[analysis.dtype], analysis.trace_notes or []
    with sizing.constants_set(module, sized.small.values):
        data, _ = sizing.trace_on_meta(module, opts.seed, sized.small.values)
        fresh = [fresh_draws(analysis.arguments, [t for _, _, t in s.args], opts.seed, k) for k in (1, 2)]
        wants = [s.eager(a) for a in fresh]
    try:
        artifact.verify(data, fresh, wants, tolerance)
    except Skip as e:
        raise Skip("trace_mismatch", f"traced on the meta device at {sizing.describe(sized.small.values)}: {e.detail}") from None
    if sized.second is not None:
        data, _ = sizing.trace_on_meta(module, opts.seed, sized.second.values)
        check_second_size(module, sized.second, analysis, opts, cuda_note, s.model if sized.tier != "B" else None, data)
    analysis.artifact, analysis.trace_notes = sizing.trace_on_meta(module, opts.seed, {})
    analysis.notes = analysis.trace_notes + [n for n in analysis.notes if n not in set(trace_notes)]
    return sizing.at_real_size(analysis, sized, draws.module_bound, refuted=refuted)


def check_real_size(sized, opts):
    """The module's own size, from the meta run: within --max-bytes, and either within the CPU's
    budget or shrunk (sizing.py). A module the meta device cannot build is built on the CPU as before."""
    real = sized.real
    if real.error:
        return
    if real.arg_bytes > opts.max_bytes:
        raise Skip("too_large", f"the arguments hold {real.arg_bytes} bytes at the module's size, above --max-bytes "
                   f"{opts.max_bytes} (the target GPU's memory less headroom)")
    if sized.small is None and not real.cheap():
        cost = f"{real.arg_bytes + real.out_bytes} bytes" + (f", {real.flops:.3g} flops" if real.flops else "")
        if real.arg_bytes + real.out_bytes > sizing.CPU_MAX_BYTES or (real.flops or 0) > sizing.CPU_MAX_FLOPS:
            raise Skip("too_large", f"at the module's size ({cost}) the CPU cannot run its checks, and no smaller size "
                       "of its constants builds" + (f" (meta: {real.forward_error})" if real.forward_error else ""))


def check_second_size(module, second, analysis, opts, cuda_note, model=None, data=None):
    """The artifact traced at S1 against eager at S2 (sizing.py): a size or count the trace froze
    differs there. A difference is a trace_mismatch. `model`: the one built at S1, when S2 builds the same;
    `data`: another artifact to check there (tier M's, traced at S2) in place of analysis.artifact."""
    with sizing.constants_set(module, second.values):
        if model is None:
            model, inputs, _, state, _ = build(module, opts.seed, cuda_note)
        else:
            seed_all(opts.seed + 1)
            inputs = [t for t in entries_of(module.get_inputs(), "get_inputs()") if isinstance(t, torch.Tensor)]
            state = {k: v.detach() for k, v in model.state_dict().items()}
        n = len(inputs)
        tensors = [*inputs, *state.values()]
        gen = torch.Generator().manual_seed(opts.seed * 1000 + 7)
        args = [draws.sample(a["draw"], tuple(t.shape), t.dtype, gen) for a, t in zip(analysis.arguments, tensors)]
        want = run(model, args[:n], dict(zip(state, args[n:])), opts.seed + 3, f"a second size ({sizing.describe(second.values)})")
    try:
        artifact.verify(analysis.artifact if data is None else data, [args], [want], opts.tolerance[analysis.dtype])
    except Skip as e:
        raise Skip("trace_mismatch", f"at a second size ({sizing.describe(second.values)}): {e.detail}") from None


def examine(s):
    """The checks in order; the Analysis of a module that passes them all."""
    dtype, arg_bytes = check_arguments(s)
    check_first_runs(s)
    specs, rules = fit_draws(s)
    fresh, fresh_outs = check_on_task_draws(s, specs)
    data, trace_notes = artifact.trace(s.model, len(s.inputs), [k for k, _, _ in s.args[len(s.inputs):]], [t for _, _, t in s.args])
    notes = s.notes + trace_notes
    artifact.verify(data, fresh, fresh_outs, s.opts.tolerance[dtype])
    if s.cost.recorder.uncounted:
        notes.append("flops omitted: uncounted ops " + ", ".join(sorted(s.cost.recorder.uncounted)))
    if s.cuda_note:
        notes.append(f"the source {s.cuda_note}")
    if scalars_note(s.model):
        notes.append(scalars_note(s.model))
    notes += [f"draw of {k}: {r}" for k, r in rules.items()]
    outputs = [{"name": f"y{i}", "shape": list(t.shape), "dtype": dtype_name(t.dtype)} for i, t in enumerate(s.outs)]
    return Analysis(module_mode="train" if s.model.training else "eval", arguments=specs, outputs=outputs, dtype=dtype,
                    flops=s.cost.flops, min_bytes=arg_bytes + sum(tensor_bytes(t) for t in s.outs), artifact=data,
                    description=describe(s.tree, s.item), notes=notes, rules=rules, trace_notes=trace_notes)


def check_arguments(s):
    """(task dtype, argument bytes): devices, dtypes, size."""
    s.args = argument_list(s.inputs, s.state, s.roles)
    for name, _, t in s.args:
        check_tensor(f"argument {name}", t, s.cuda_note)
    floats = [dtype_name(t.dtype) for _, _, t in s.args if dtype_name(t.dtype) in FLOAT_DTYPES]
    if not floats:
        raise Skip("unsupported_dtype", "no floating-point argument (the task's dtype is the first one's)")
    arg_bytes = sum(tensor_bytes(t) for _, _, t in s.args)
    if arg_bytes > s.opts.max_bytes:
        raise Skip("too_large", f"the arguments hold {arg_bytes} bytes, above --max-bytes {s.opts.max_bytes}")
    return floats[0], arg_bytes


def check_first_runs(s):
    """The run that records ops and flops, a rerun on the same arguments, a run on a second draw."""
    seed = s.opts.seed
    with CostRun() as s.cost:
        s.outs = run(s.model, s.inputs, s.state, seed + 3, "get_inputs()", s.cuda_note)
    check_outputs(s.outs, s.cuda_note)
    if s.cost.recorder.dynamic_shape_ops:
        raise Skip("data_dependent_shape", "forward calls " + ", ".join(sorted(s.cost.recorder.dynamic_shape_ops))
                   + " (output shapes follow the values)")
    again = run(s.model, s.inputs, s.state, seed + 4, "get_inputs()")
    if len(again) != len(s.outs) or not all(same(a, b) for a, b in zip(s.outs, again)):
        random_ops = sorted(s.cost.recorder.random_ops)
        raise Skip("stochastic", "two runs on the same arguments (seeded differently) differ"
                   + (f"; forward calls {', '.join(random_ops)}" if random_ops else "")
                   + (" (the module runs in train mode)" if s.model.training else ""))
    outs_b = run(s.model, s.inputs_b, s.state, seed + 3, "a second get_inputs() draw")
    check_shapes(s.outs, outs_b, "on another get_inputs() draw")
    s.outs_b = outs_b


def check_shapes(outs, other, where):
    shapes, got = [list(t.shape) for t in outs], [list(t.shape) for t in other]
    if got != shapes:
        raise Skip("data_dependent_shape", f"output shapes {shapes} become {got} {where}")


def fit_draws(s):
    """(argument specs of the task file, the rule each draw came from)."""
    hint = draws.source_hint(get_inputs_text(s.tree, s.item.source))
    specs, rules = [], {}
    for name, role, t in s.args:
        d, rules[name] = draws.infer(name, role, t, s.model, hint)
        specs.append({"name": name, "role": role, "shape": list(t.shape), "dtype": dtype_name(t.dtype), "draw": d})
    return specs, rules


def check_on_task_draws(s, specs):
    """Two draws of every argument from the task's draws: output shapes hold, outputs vary."""
    fresh = [fresh_draws(specs, [t for _, _, t in s.args], s.opts.seed, k) for k in (1, 2)]
    fresh_outs = [s.eager(a) for a in fresh]
    for fo in fresh_outs:
        check_shapes(s.outs, fo, "on the task's draws")
    const = [i for i in range(len(s.outs)) if same(s.outs[i], s.outs_b[i]) and same(s.outs[i], fresh_outs[0][i])]
    if const:
        raise Skip("constant_output", "output " + ", ".join(f"y{i}" for i in const) + " is the same on different draws")
    s.notes += [f"output y{i} holds NaN or inf on the task's draws, not on get_inputs()'s"
                for i, t in enumerate(s.outs) if finite(t) and not all(finite(fo[i]) for fo in fresh_outs)]
    return fresh, fresh_outs


def finite(t):
    return not t.is_floating_point() or bool(torch.isfinite(t).all())


def warm_up():
    """Runs every torch path the checks take once, on a tiny model, outside any time limit: torch
    imports parts of itself lazily (torch._dynamo on the first meta-device call, the tracer, the
    flop counter), and an alarm that cut such an import short would leave it half-initialised for
    every module after."""
    model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.BatchNorm1d(2))
    x = torch.randn(4, 3)
    with torch.device("meta"):
        torch.nn.Linear(3, 2)(torch.randn(4, 3))
    state = {k: v.detach() for k, v in model.state_dict().items()}
    with CostRun():
        run(model, [x], state, 0, "the warm-up")
    data, _ = artifact.trace(model, 1, list(state), [x, *state.values()])
    artifact.verify(data, [[x, *state.values()]], [run(model, [x], state, 0, "the warm-up")], {"atol": 1e-4, "rtol": 1e-4})
