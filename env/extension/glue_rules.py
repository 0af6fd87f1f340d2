"""The extension glue reader's vocabulary (issue 28; model_glue.py reads model_new.py with it): what may
be imported and constructed, the refusal type, and the anti-cheat scan of constructs refused wherever they
appear (EXTENSION_PLAN.md, Refusals). Standard library only."""
import ast
import math

PLAN_VERSION = 1
MAX_SOURCE_BYTES = 1 << 20
FILE_LABEL = "model_new.py"

# Local import name -> dotted module path: what may be imported, and nothing else.
ALLOWED_MODULES = ("torch", "torch.nn", "torch.nn.functional", "torch.utils", "torch.utils.cpp_extension", "math", "typing",
                   "__future__", "cuda_extension")
THREAD_MODULES = ("threading", "_thread", "concurrent", "multiprocessing", "asyncio", "torch.multiprocessing", "queue", "sched")
LOADERS = {"torch.utils.cpp_extension.load_inline": "load_inline", "torch.utils.cpp_extension.load": "cpp_extension_load"}
SIDE_STREAM = ("torch.cuda.Stream", "torch.cuda.stream", "torch.cuda.ExternalStream", "torch.cuda.set_stream",
               "torch.cuda.StreamContext", "torch.cuda.graph", "torch.cuda.CUDAGraph", "torch.cuda.graphs")
DYNAMIC_BUILTINS = ("exec", "eval", "compile", "__import__", "getattr", "setattr", "delattr", "globals", "locals", "vars",
                    "open", "breakpoint", "input", "memoryview", "id")

# torch.nn modules whose parameters a ModelNew may hold: constructor parameters in order, and the ones
# torch expands to a tuple (`stride=2` is `(2, 2)`; `self.conv.stride[0]` reads it).
_CONV = ("in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation", "groups", "bias", "padding_mode")
_CONVT = ("in_channels", "out_channels", "kernel_size", "stride", "padding", "output_padding", "groups", "bias", "dilation",
          "padding_mode")
_NORM = ("num_features", "eps", "momentum", "affine", "track_running_stats")
NN_MODULES = {
    "Linear": ("in_features", "out_features", "bias"),
    **{f"Conv{d}d": _CONV for d in (1, 2, 3)},
    **{f"ConvTranspose{d}d": _CONVT for d in (1, 2, 3)},
    **{f"BatchNorm{d}d": _NORM for d in (1, 2, 3)},
    **{f"InstanceNorm{d}d": _NORM for d in (1, 2, 3)},
    "LayerNorm": ("normalized_shape", "eps", "elementwise_affine", "bias"),
    "GroupNorm": ("num_groups", "num_channels", "eps", "affine"),
    "RMSNorm": ("normalized_shape", "eps", "elementwise_affine"),
    "Embedding": ("num_embeddings", "embedding_dim", "padding_idx"),
    "PReLU": ("num_parameters", "init"),
}
HYPER_DEFAULTS = {"stride": 1, "padding": 0, "dilation": 1, "groups": 1, "bias": True, "output_padding": 0, "eps": 1e-5,
                  "momentum": 0.1, "affine": True, "track_running_stats": True, "elementwise_affine": True, "padding_idx": None,
                  "num_parameters": 1, "init": 0.25}
TUPLE_HYPERS = ("kernel_size", "stride", "padding", "dilation", "output_padding")
STATE_LEAVES = ("weight", "bias", "running_mean", "running_var", "num_batches_tracked")
TENSOR_FACTORIES = ("empty", "zeros", "ones", "randn", "rand", "full", "tensor", "empty_like", "zeros_like", "ones_like",
                    "randn_like", "arange")
LOAD_INLINE_PARAMS = ("name", "cpp_sources", "cuda_sources", "functions", "extra_cflags", "extra_cuda_cflags", "extra_ldflags",
                      "extra_include_paths", "build_directory", "verbose", "with_cuda", "is_python_module",
                      "with_pytorch_error_handling", "keep_intermediates", "use_pch")
LOAD_PARAMS = ("name", "sources", "extra_cflags", "extra_cuda_cflags", "extra_ldflags", "extra_include_paths", "build_directory",
               "verbose", "with_cuda", "is_python_module", "is_standalone", "keep_intermediates")
IGNORED_LOADER_KWARGS = ("verbose", "with_cuda", "with_pytorch_error_handling", "keep_intermediates", "use_pch")
FORWARD_ALLOWED = ("forward may only bind names to extension calls, inputs, self.<attr> reads and literals, "
                   "call .contiguous() on them, and return tensors")


class GlueError(Exception):
    """A construct the glue reader refuses; `rule` names the family (EXTENSION_PLAN.md, Refusals)."""

    def __init__(self, node, message, rule="glue"):
        super().__init__(message)
        self.line = getattr(node, "lineno", 0) if node is not None else 0
        self.message = message
        self.rule = rule


def dotted(node, imports):
    """`torch.cuda.Stream` -> "torch.cuda.Stream" with import aliases resolved; None when not rooted at an import."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id not in imports:
        return None
    return ".".join([imports[node.id]] + parts[::-1])


def literal(node, consts=None):
    """A number, bool, None or str literal (unary minus allowed, module constants resolved), or a list of them;
    raises ValueError otherwise. Numbers are the worker's: finite doubles and signed 64-bit integers."""
    v = _literal(node, consts)
    for x in v if isinstance(v, list) else [v]:
        if (isinstance(x, float) and not math.isfinite(x)) or (type(x) is int and not -2**63 <= x < 2**63):
            raise ValueError("not a finite double or a 64-bit integer")
    return v


def _literal(node, consts):
    if isinstance(node, ast.Constant) and (node.value is None or isinstance(node.value, (bool, int, float, str))):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _literal(node.operand, consts)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.Name) and consts is not None and node.id in consts and not isinstance(consts[node.id], list):
        return consts[node.id]
    if isinstance(node, (ast.Tuple, ast.List)):
        return [_literal(e, consts) for e in node.elts]
    raise ValueError("not a literal")


# ---------------------------------------------------------------------------------------------------
# Anti-cheat: constructs refused wherever they are, before the structure is read.

def _forbidden(node, imports):
    """(rule, message) when `node` is refused wherever it appears, else None."""
    if isinstance(node, (ast.Try, getattr(ast, "TryStar", ast.Try))):
        return "fallback", ("try/except is not allowed (a fallback to PyTorch when the extension fails is refused); "
                            "let errors reach the judge")
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return "host_cache", f"'{type(node).__name__.lower()}' is not allowed (state kept between calls is a host-side cache)"
    if isinstance(node, ast.Name) and node.id == "Model":
        return "reference_model", "the reference 'Model' cannot be used: ModelNew must compute with the extension only"
    if isinstance(node, ast.Attribute) and node.attr in ("data_ptr", "_cdata", "untyped_storage", "storage"):
        return "host_cache", f"'.{node.attr}' is not allowed (results cached by a tensor's address are a host-side cache)"
    if isinstance(node, ast.Attribute) and node.attr.startswith("__") and node.attr.endswith("__") and node.attr != "__init__":
        return "monkeypatch", f"dunder attribute '{node.attr}' is not allowed"
    if isinstance(node, ast.FunctionDef) and node.name in ("__torch_function__", "__torch_dispatch__"):
        return "tensor_subclass", f"'{node.name}' is not allowed (a tensor subclass or deferred result)"
    if isinstance(node, ast.ClassDef):
        bases = [dotted(b, imports) or getattr(b, "id", "") for b in node.bases]
        message = f"class '{node.name}' subclasses {', '.join(bases)}: only ModelNew(nn.Module) may be defined"
        if "Model" in bases:
            return "reference_model", message + " (subclassing the reference Model reuses its PyTorch forward)"
        if any(b in ("torch.Tensor", "Tensor", "torch.nn.Parameter") for b in bases):
            return "tensor_subclass", message + " (a tensor subclass can defer or fake its result)"
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        for a in node.names:
            bad = import_rule(a.name if isinstance(node, ast.Import) else node.module or "")
            if bad and bad[0] != "import":
                return bad
    if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
        for target in node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]:
            for t in ast.walk(target):
                root = t
                while isinstance(root, (ast.Attribute, ast.Subscript)):
                    root = root.value
                module_attr = isinstance(t, ast.Attribute) and isinstance(root, ast.Name) and root.id != "self"
                if module_attr or (isinstance(t, (ast.Attribute, ast.Subscript)) and dotted(t.value, imports) is not None):
                    return "monkeypatch", (f"assigning to '{ast.unparse(t)}' patches a module (torch, its functions, the timer "
                                           "or the extension): not allowed")
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in DYNAMIC_BUILTINS:
        rules = {"setattr": "monkeypatch", "delattr": "monkeypatch", "getattr": "monkeypatch", "id": "host_cache"}
        rule = rules.get(node.func.id, "dynamic_code")
        return rule, f"'{node.func.id}(...)' is not allowed in glue code"
    name = dotted(node, imports) if isinstance(node, (ast.Attribute, ast.Name)) else None
    if isinstance(node, ast.ImportFrom) and node.module:
        name = next((f"{node.module}.{a.name}" for a in node.names if _is_side_stream(f"{node.module}.{a.name}")), None)
    if name and _is_side_stream(name):
        return "side_stream", f"'{name}' is not allowed: the extension runs on the current stream only (work elsewhere escapes the timing)"
    return None


def _is_side_stream(name):
    return any(name == s or name.startswith(s + ".") for s in SIDE_STREAM)


def scan_forbidden(tree, imports):
    hits = []
    for node in ast.walk(tree):
        found = _forbidden(node, imports)
        if found:
            hits.append((getattr(node, "lineno", 0), getattr(node, "col_offset", 0), node, found))
    if hits:
        _, _, node, (rule, message) = min(hits, key=lambda h: h[:2])
        raise GlueError(node, message, rule)


def rule_of(node):
    for n in ast.walk(node):
        if isinstance(n, (ast.If, ast.For, ast.While, ast.With, ast.IfExp, ast.AsyncFor, ast.AsyncWith, ast.Match)):
            return "control_flow"
    return "glue"

def import_rule(module):
    root = module.split(".")[0]
    if any(module == m or module.startswith(m + ".") for m in THREAD_MODULES):
        return "thread", f"import of '{module}' is not allowed (no threads or processes: work must finish inside the call)"
    if root in ("model", "reference"):
        return "reference_model", f"import of '{module}' is not allowed: the reference Model cannot be used"
    if module in ALLOWED_MODULES:
        return None
    return "import", (f"import of '{module}' is not allowed: only torch, torch.nn, torch.nn.functional, math, typing, "
                      "torch.utils.cpp_extension and the extension (cuda_extension) may be imported")
