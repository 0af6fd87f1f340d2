"""Loading one module: the static custom-CUDA check, exec in a fresh namespace under a time limit,
the three names a KernelBench module must define, and the seeding before each of its calls."""
import ast
import contextlib
import random
import signal
import sys
import types

from .common import Skip, one_line

# Imports that bring a kernel language or compiler along (by top-level package), and names whose
# use builds CUDA code at run time.
KERNEL_PACKAGES = {"triton", "cupy", "numba", "pycuda", "cuda", "cutlass", "tilelang", "warp"}
KERNEL_NAMES = {"load_inline", "cpp_extension", "CUDAExtension", "jiterator", "_create_jit_fn", "RawKernel", "SourceModule"}
# Text that only CUDA C++ source holds.
CUDA_TEXT = ("__global__", "__device__", "blockIdx", "threadIdx", "<<<", "#include <cuda", "cuda_runtime")


class Timeout(BaseException):
    """Raised by the alarm: a BaseException so that a module's `except Exception` cannot swallow it."""


@contextlib.contextmanager
def time_limit(seconds):
    """Raises Timeout in the main thread after `seconds` (checked between Python bytecodes: one long
    native call finishes first)."""
    if not seconds or seconds <= 0:
        yield
        return

    def on_alarm(signum, frame):
        raise Timeout()

    import time
    outer = signal.getitimer(signal.ITIMER_REAL)[0]  # an enclosing limit keeps its deadline
    start = time.monotonic()
    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, min(seconds, outer) if outer > 0 else seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        if outer > 0:
            signal.setitimer(signal.ITIMER_REAL, max(outer - (time.monotonic() - start), 1e-3))


def parse(item):
    if item.read_error:
        raise Skip("load_error", item.read_error)
    try:
        return ast.parse(item.source, filename=item.file)
    except SyntaxError as e:
        raise Skip("load_error", f"syntax error at line {e.lineno}: {e.msg}") from None
    except ValueError as e:  # null bytes
        raise Skip("load_error", f"cannot be parsed: {e}") from None


def custom_cuda_use(tree):
    """What in the source builds or calls custom GPU code (None when nothing does)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] in KERNEL_PACKAGES or a.name.startswith("torch.utils.cpp_extension"):
                    return f"imports {a.name}"
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module.split(".")[0] in KERNEL_PACKAGES or node.module.startswith("torch.utils.cpp_extension"):
                return f"imports from {node.module}"
            if any(a.name in KERNEL_NAMES for a in node.names):
                return f"imports {node.module}.{next(a.name for a in node.names if a.name in KERNEL_NAMES)}"
        elif isinstance(node, ast.Attribute) and node.attr in KERNEL_NAMES:
            return f"uses .{node.attr}"
        elif isinstance(node, ast.Name) and node.id in KERNEL_NAMES:
            return f"uses {node.id}"
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            hit = next((t for t in CUDA_TEXT if t in node.value), None)
            if hit:
                return f"holds CUDA source text ({hit!r} in a string)"
    return None


# Packages that build a model from a hub (KernelBench level 4: Hugging Face models by name).
HUB_PACKAGES = {"transformers", "diffusers", "timm", "huggingface_hub"}


def network_use(tree):
    """What in the source needs a model hub (None when nothing does)."""
    for node in ast.walk(tree):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module] if isinstance(node, ast.ImportFrom) and node.module else []
        hit = next((n for n in names if n.split(".")[0] in HUB_PACKAGES), None)
        if hit:
            return f"imports {hit}"
        if isinstance(node, ast.Attribute) and node.attr == "from_pretrained":
            return "calls .from_pretrained"
    return None


def cuda_device_use(tree):
    """A note when the source names the CUDA device itself ("cuda" strings, .cuda()): such tensors are
    made on the GPU whatever device the importer runs on, and tracing bakes the device in."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                (node.value == "cuda" or node.value.startswith("cuda:")):
            return f"names the device {node.value!r} (line {node.lineno})"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "cuda":
            return f"calls .cuda() (line {node.lineno})"
    return None


def seed_all(seed):
    import torch
    torch.manual_seed(seed)
    random.seed(seed)
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed(seed % (1 << 32))


def load_module(item, name, timeout_s):
    """Runs the source in a fresh module `name`; returns the module. Every failure is a load_error."""
    module = types.ModuleType(name)
    module.__file__ = item.file
    sys.modules[name] = module  # dataclasses and the like look their module up while the body runs
    try:
        code = compile(item.source, item.file, "exec")
        with time_limit(timeout_s):
            exec(code, module.__dict__)
    except Timeout:
        raise Skip("load_error", f"running the module's top level did not finish in {timeout_s:g} s") from None
    except BaseException as e:  # noqa: B036  (SystemExit from a module is a load error too)
        if isinstance(e, KeyboardInterrupt):
            raise
        raise Skip("load_error", f"running the module failed: {type(e).__name__}: {one_line(e)}") from None
    missing = [n for n in ("Model", "get_inputs", "get_init_inputs") if not callable(getattr(module, n, None))]
    if missing:
        raise Skip("load_error", "the module defines no " + ", ".join(missing))
    return module


def unload_module(name):
    sys.modules.pop(name, None)
