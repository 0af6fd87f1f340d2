"""tools/synth_gpu.py as a module, for the tests that call its functions directly (a fresh module
each call: its module-level state, such as the fused checks' self-check, starts anew)."""
import importlib.util
import os

SOURCE_DIR = os.environ.get("KFORGE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
TOOL = os.path.join(SOURCE_DIR, "tools", "synth_gpu.py")


def load_tool():
    spec = importlib.util.spec_from_file_location("synth_gpu", TOOL)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m
