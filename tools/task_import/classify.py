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


def fresh_draws(specs, seed, k):
    gen = torch.Generator().manual_seed(seed * 1000 + k)
    return [draws.sample(s["draw"], tuple(s["shape"]), t.dtype, gen) for s, t in specs]


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
            model, inputs, inputs_b, state, roles = build(module, opts.seed, cuda_note)
            phase = "running the model"
            return examine(tree, item, model, inputs, inputs_b, state, roles, cuda_note, opts)
    except Timeout:
        reason = "load_error" if phase == "building the model" else "too_large"
        raise Skip(reason, f"{phase} did not finish in {opts.timeout_s:g} s on the CPU") from None


def examine(tree, item, model, inputs, inputs_b, state, roles, cuda_note, opts):
    args = argument_list(inputs, state, roles)
    for name, _, t in args:
        check_tensor(f"argument {name}", t, cuda_note)
    floats = [dtype_name(t.dtype) for _, _, t in args if dtype_name(t.dtype) in FLOAT_DTYPES]
    if not floats:
        raise Skip("unsupported_dtype", "no floating-point argument (the task's dtype is the first one's)")
    arg_bytes = sum(tensor_bytes(t) for _, _, t in args)
    if arg_bytes > opts.max_bytes:
        raise Skip("too_large", f"the arguments hold {arg_bytes} bytes, above --max-bytes {opts.max_bytes}")
    module_mode = "train" if model.training else "eval"
    seed = opts.seed

    with CostRun() as cost:
        outs = run(model, inputs, state, seed + 3, "get_inputs()", cuda_note)
    check_outputs(outs, cuda_note)
    if cost.recorder.dynamic_shape_ops:
        raise Skip("data_dependent_shape", "forward calls " + ", ".join(sorted(cost.recorder.dynamic_shape_ops))
                   + " (output shapes follow the values)")
    again = run(model, inputs, state, seed + 4, "get_inputs()")
    if len(again) != len(outs) or not all(same(a, b) for a, b in zip(outs, again)):
        random_ops = sorted(cost.recorder.random_ops)
        raise Skip("stochastic", "two runs on the same arguments (seeded differently) differ"
                   + (f"; forward calls {', '.join(random_ops)}" if random_ops else "")
                   + (" (the module runs in train mode)" if module_mode == "train" else ""))
    outs_b = run(model, inputs_b, state, seed + 3, "a second get_inputs() draw")
    shapes = [list(t.shape) for t in outs]
    if [list(t.shape) for t in outs_b] != shapes:
        raise Skip("data_dependent_shape", f"output shapes {shapes} become {[list(t.shape) for t in outs_b]} on another draw")

    hint = draws.source_hint(get_inputs_text(tree, item.source))
    specs, rules = [], {}
    for name, role, t in args:
        d, rule = draws.infer(name, role, t, model, hint)
        specs.append(({"name": name, "role": role, "shape": list(t.shape), "dtype": dtype_name(t.dtype), "draw": d}, t))
        rules[name] = rule
    n = len(inputs)
    names = [name for name, _, _ in args[n:]]

    def eager(a):
        return run(model, a[:n], dict(zip(names, a[n:])), seed + 3, "fresh draws")

    fresh = [fresh_draws(specs, seed, k) for k in (1, 2)]
    fresh_outs = [eager(a) for a in fresh]
    for fo in fresh_outs:
        if [list(t.shape) for t in fo] != shapes:
            raise Skip("data_dependent_shape", f"output shapes {shapes} become {[list(t.shape) for t in fo]} on the task's draws")
    const = [i for i in range(len(outs)) if same(outs[i], outs_b[i]) and same(outs[i], fresh_outs[0][i])]
    if const:
        raise Skip("constant_output", "output " + ", ".join(f"y{i}" for i in const) + " is the same on different draws")

    dtype = floats[0]
    tol = opts.tolerance[dtype]
    data, notes = artifact.trace(model, n, names, [t for _, _, t in args])
    artifact.verify(data, fresh, fresh_outs, tol)
    outputs = [{"name": f"y{i}", "shape": list(t.shape), "dtype": dtype_name(t.dtype)} for i, t in enumerate(outs)]
    min_bytes = arg_bytes + sum(tensor_bytes(t) for t in outs)
    if cost.recorder.uncounted:
        notes.append("flops omitted: uncounted ops " + ", ".join(sorted(cost.recorder.uncounted)))
    if cuda_note:
        notes.append(f"the source {cuda_note}")
    notes += [f"draw of {k}: {r}" for k, r in rules.items()]
    return Analysis(module_mode=module_mode, arguments=[s for s, _ in specs], outputs=outputs, dtype=dtype,
                    flops=cost.flops, min_bytes=min_bytes, artifact=data, description=describe(tree, item), notes=notes)
