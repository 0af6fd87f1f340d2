"""What the GPU stage's suites (test_synth_gpu.py, test_synth_gpu_runs.py, test_synth_gpu_fused.py)
share. load_tool: the package (tools/dataset/synth_gpu/) for the tests that call its functions directly, a
fresh import each call (its module-level state, such as the fused checks' self-check, starts anew),
as one namespace holding every module's names and the modules themselves (m.checks.CHUNK = ...
reaches the checks). The rest runs it as a command: `tool`, `kforge`, the records a run wrote, the
tiny dataset made by `kforge synth` (make_dataset, for a module-scoped fixture) and its copies, and
the one-line errors."""
import importlib
import json
import os
import shutil
import subprocess
import sys
import types

SOURCE_DIR = os.environ.get("KFORGE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
TOOL = os.path.join(SOURCE_DIR, "tools", "dataset", "synth_gpu.py")
KFORGE = os.environ.get("KFORGE_BIN", "kforge")
N_TASKS = 4
FAST = ["--min-n", "3", "--max-n", "8", "--max-task-s", "0.5", "--warmup-calls", "1", "--warmup-ms", "1",
        "--progress-s", "0", "--threads", "1"]
MODULES = ("common", "records", "torch_env", "checks", "timing", "pool", "loops", "run", "merge", "cli")


def load_tool():
    tools = os.path.join(SOURCE_DIR, "tools", "dataset")
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


def kforge(*args, check=True):
    return subprocess.run([KFORGE, *args], capture_output=True, text=True, check=check)


def tool(*args, check=True, timeout=600, env=None):
    r = subprocess.run([sys.executable, TOOL, *map(str, args)], capture_output=True, text=True, timeout=timeout, env=env)
    if check and r.returncode != 0:
        raise AssertionError(f"synth_gpu failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return r


def tool_start(*args, env=None):
    """tool() started and not waited for: tool_wait gives its result."""
    return subprocess.Popen([sys.executable, TOOL, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)


def tool_wait(p, timeout=600):
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
    if p.returncode != 0:
        raise AssertionError(f"synth_gpu failed ({p.returncode}):\n{out}\n{err}")
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


def records(out):
    rows = []
    for name in sorted(os.listdir(out)):
        if name.startswith("part-") and name.endswith(".jsonl"):
            with open(os.path.join(out, name)) as f:
                rows += [json.loads(line) for line in f if line.endswith("\n")]
    return rows


def make_dataset(tmp_path_factory):
    """A 4-task dataset from `kforge synth` and two window configs: wide.yaml keeps every task,
    narrow.yaml rejects every one."""
    d = tmp_path_factory.mktemp("synth_gpu")
    (d / "synth.yaml").write_text(f"seed: 7\ntarget_tasks: {N_TASKS}\nshard_candidates: 10\n")
    kforge("synth", "--config", str(d / "synth.yaml"), "--out", str(d / "ds"), "--quiet")
    (d / "wide.yaml").write_text("window_ms_low: 0\nwindow_ms_high: 1.0e+9\n")
    (d / "narrow.yaml").write_text("window_ms_low: 1.0e+6\nwindow_ms_high: 1.0e+7\n")
    return d


def fresh_copy(dataset, tmp_path):
    shutil.copytree(dataset / "ds", tmp_path / "ds")
    return tmp_path / "ds" / "dataset.h5"


def one_error_line(r, *needles):
    assert r.returncode == 1, r.stdout + r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("synth_gpu: error: "), lines[0]
    for n in needles:
        assert str(n) in lines[0], lines[0]

