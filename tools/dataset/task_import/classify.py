"""The checks that decide whether a module becomes a task, in the order they run. Each failure
raises Skip with its reason code; a module that passes comes back as an Analysis (everything the
task file needs)."""
import ast
import dataclasses

import torch

from . import artifact, draws
from .common import FLOAT_DTYPES, Skip, dtype_name, one_line
from .cost import CostRun, tensor_bytes
from .loading import Timeout, custom_cuda_use, cuda_device_use, load_module, parse, seed_all, time_limit
from .running import as_outputs, call, same


@dataclasses.dataclass
class Options:
    seed: int = 0
    max_bytes: int = 4 << 30
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


def tensors_of(value, what):
    if not isinstance(value, (list, tuple)):
        raise Skip("load_error", f"{what} returns {type(value).__name__}, not a list")
    for i, v in enumerate(value):
        if not isinstance(v, torch.Tensor):
            raise Skip("load_error", f"{what} entry {i} is {type(v).__name__}: non-tensor inputs are not supported")
    return list(value)


def check_tensor(name, t, cuda_note):
    if t.device.type != "cpu":
        raise Skip("load_error", f"{name} is on {t.device}: the module builds tensors on the GPU itself"
                   + (f" ({cuda_note})" if cuda_note else ""))
    if dtype_name(t.dtype) is None:
        raise Skip("unsupported_dtype", f"{name} is {str(t.dtype).replace('torch.', '')} "
                   "(tasks hold float32, float16, bfloat16, int32, int64, bool)")


def meta_bytes(module, seed):
    """The argument bytes, found on the meta device (no memory taken), or None when the module does
    not build there: a module too large to hold is skipped before its tensors are made."""
    try:
        seed_all(seed)
        with torch.device("meta"):
            model = module.Model(*module.get_init_inputs())
            inputs = module.get_inputs()
        tensors = [t for t in inputs if isinstance(t, torch.Tensor)] + list(model.state_dict().values())
        return sum(t.numel() * t.element_size() for t in tensors)
    except Exception:  # noqa: BLE001  (the real build reports what is wrong)
        return None


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
        inputs = tensors_of(module.get_inputs(), "get_inputs()")
        seed_all(seed + 2)
        inputs_b = tensors_of(module.get_inputs(), "get_inputs()")
    except (Skip, Timeout):
        raise
    except Exception as e:
        raise Skip("load_error", f"building the model or its inputs failed: {type(e).__name__}: {one_line(e)}"
                   + (f" (the source {cuda_note})" if cuda_note else "")) from None
    if [(t.shape, t.dtype) for t in inputs] != [(t.shape, t.dtype) for t in inputs_b]:
        raise Skip("load_error", "get_inputs() gives other shapes or dtypes on each call")
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
    tree = parse(item)
    why = custom_cuda_use(tree)
    if why:
        raise Skip("custom_cuda", f"the reference {why}")
    cuda_note = cuda_device_use(tree)
    module = load_module(item, module_name, opts.timeout_s)
    phase = "building the model"
    try:
        with time_limit(opts.timeout_s):
            planned = meta_bytes(module, opts.seed)
            if planned is not None and planned > opts.max_bytes:
                raise Skip("too_large", f"the arguments would hold {planned} bytes, above --max-bytes {opts.max_bytes}")
            s = Subject(tree, item, *build(module, opts.seed, cuda_note), cuda_note=cuda_note, opts=opts)
            phase = "running the model"
            return examine(s)
    except Timeout:
        reason = "load_error" if phase == "building the model" else "too_large"
        raise Skip(reason, f"{phase} did not finish in {opts.timeout_s:g} s on the CPU") from None


def examine(s):
    """The checks in order; the Analysis of a module that passes them all."""
    dtype, arg_bytes = check_arguments(s)
    check_first_runs(s)
    specs, rules = fit_draws(s)
    fresh, fresh_outs = check_on_task_draws(s, specs)
    data, notes = artifact.trace(s.model, len(s.inputs), [k for k, _, _ in s.args[len(s.inputs):]], [t for _, _, t in s.args])
    notes = s.notes + notes
    artifact.verify(data, fresh, fresh_outs, s.opts.tolerance[dtype])
    if s.cost.recorder.uncounted:
        notes.append("flops omitted: uncounted ops " + ", ".join(sorted(s.cost.recorder.uncounted)))
    if s.cuda_note:
        notes.append(f"the source {s.cuda_note}")
    notes += [f"draw of {k}: {r}" for k, r in rules.items()]
    outputs = [{"name": f"y{i}", "shape": list(t.shape), "dtype": dtype_name(t.dtype)} for i, t in enumerate(s.outs)]
    return Analysis(module_mode="train" if s.model.training else "eval", arguments=specs, outputs=outputs, dtype=dtype,
                    flops=s.cost.flops, min_bytes=arg_bytes + sum(tensor_bytes(t) for t in s.outs), artifact=data,
                    description=describe(s.tree, s.item), notes=notes)


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
