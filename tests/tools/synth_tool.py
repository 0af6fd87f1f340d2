"""The GPU stage's package (tools/synth_gpu/) for the tests that call its functions directly: a fresh
import each call (its module-level state, such as the fused checks' self-check, starts anew), as one
namespace holding every module's names and the modules themselves (m.checks.CHUNK = ... reaches the
checks)."""
import importlib
import os
import sys
import types

SOURCE_DIR = os.environ.get("KFORGE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
TOOL = os.path.join(SOURCE_DIR, "tools", "synth_gpu.py")
MODULES = ("common", "records", "torch_env", "checks", "timing", "pool", "loops", "run", "merge", "cli")


def load_tool():
    tools = os.path.join(SOURCE_DIR, "tools")
    if tools not in sys.path:
        sys.path.insert(0, tools)
    for k in [k for k in sys.modules if k == "synth_gpu" or k.startswith("synth_gpu.")]:
        del sys.modules[k]
    ns = types.SimpleNamespace()
    for name in MODULES:
        mod = importlib.import_module("synth_gpu." + name)
        for k, v in vars(mod).items():
            if not k.startswith("__"):
                setattr(ns, k, v)
        setattr(ns, name, mod)
    return ns
