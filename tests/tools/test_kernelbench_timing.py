"""tools/bench/kernelbench_timing.py (KernelBench's own timing beside kforge's baselines), in its CPU mode.

KernelBench's timing functions are CUDA-only, so the whole run here uses a stand-in timing.py with the
same two functions (it logs its calls, so the test sees that the script used it with KernelBench's
arguments); the real checkout, where one is found ($KFORGE_KERNELBENCH, .gpu/kb, or the fetched mirror
extracted by hand), is checked for what the script needs of it: its timing.py loads alone (without the
package's openai/litellm imports) and has the two functions with the signature the script calls."""
import inspect
import json
import os
import subprocess
import sys

import pytest
from synth_tool import SOURCE_DIR, kforge

TOOL = os.path.join(SOURCE_DIR, "tools", "bench", "kernelbench_timing.py")
MODULES = os.path.join(SOURCE_DIR, "tests", "tools", "import_modules")
sys.path.insert(0, os.path.join(SOURCE_DIR, "tools", "bench"))

FAKE = '''import json, os, time
import numpy as np


def time_execution_with_cuda_event(kernel_fn, args, num_warmup=3, num_trials=10, discard_first=1, verbose=True,
                                   device=None):
    with open(os.environ["FAKE_KB_LOG"], "a") as f:
        f.write(json.dumps({"warmup": num_warmup, "trials": num_trials, "discard": discard_first, "device": device}) + "\\n")
    print("[Profiling] stand-in")  # the script keeps KernelBench's prints off its stdout
    for _ in range(num_warmup):
        kernel_fn(*args)
    out = []
    for i in range(num_trials + discard_first):
        t = time.perf_counter()
        kernel_fn(*args)
        if i >= discard_first:
            out.append((time.perf_counter() - t) * 1e3)
    return out


def get_timing_stats(elapsed_times, device=None):
    return {"mean": float(f"{np.mean(elapsed_times):.3g}"), "std": float(f"{np.std(elapsed_times):.3g}"),
            "min": float(f"{np.min(elapsed_times):.3g}"), "max": float(f"{np.max(elapsed_times):.3g}"),
            "num_trials": len(elapsed_times)}
'''
OK_ID, REJECTED_ID = "kb_l1_relu_op", "kb_l2_linear_bn_eval"


def run_tool(*args, env=None):
    return subprocess.run([sys.executable, TOOL, *map(str, args)], capture_output=True, text=True, timeout=900,
                          env=env)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    d = tmp_path_factory.mktemp("kbt")
    kforge("tasks", "import", "--format", "kernelbench", os.path.join(MODULES, "level1", "relu_op.py"),
           os.path.join(MODULES, "level2", "linear_bn_eval.py"), "--out", str(d / "imp"), "--no-input-check")
    gpu = d / "imp" / "gpu"
    gpu.mkdir()
    with open(gpu / "part-0.jsonl", "w") as f:  # the GPU stage's records, as it writes them (the fields read)
        f.write(json.dumps({"id": OK_ID, "status": "ok", "eager_ms": 0.05, "compile_ms": 0.04, "peak_mem_gb": 0.001}) + "\n")
        f.write(json.dumps({"id": REJECTED_ID, "status": "rejected:compile_mismatch", "eager_ms": 0.05}) + "\n")
    kb = d / "kb" / "src" / "kernelbench"
    kb.mkdir(parents=True)
    (kb / "timing.py").write_text(FAKE)
    return d


def test_a_cpu_run_times_the_kept_tasks_with_the_given_function_writes_the_record_and_resumes(setup, tmp_path):
    import results_doc
    log = tmp_path / "calls.jsonl"
    env = dict(os.environ, FAKE_KB_LOG=str(log))
    out = tmp_path / "out"
    args = ["--kernelbench", setup / "kb", "--dataset", setup / "imp" / "dataset.h5", "--out", out, "--device", "cpu",
            "--trials", "7", "--warmup", "2", "--workers", "1"]
    r = run_tool(*args, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[Profiling]" not in r.stdout and "compile_mismatch" in r.stderr and "rejected:compile_mismatch 1" in r.stderr
    rows = [json.loads(line) for line in open(out / "kernelbench_timing-0.jsonl")]
    assert [x["id"] for x in rows] == [OK_ID], rows  # the stage's rejected task is left out
    row = rows[0]
    assert row["status"] == "ok" and row["compiled_ahead"], row  # the compile worker filled the caches first
    assert row["kb_eager"]["num_trials"] == 7 and row["kb_compile"]["num_trials"] == 7, row
    assert row["eager_ratio"] == pytest.approx(0.05 / row["kb_eager"]["mean"]), row
    assert row["compile_ratio_vs_kb_median"] == pytest.approx(0.04 / row["kb_compile_samples"]["median_ms"]), row
    calls = [json.loads(line) for line in open(log)]
    assert calls == [{"warmup": 2, "trials": 7, "discard": 1, "device": None}] * 2, calls  # eager, then compiled
    doc = json.load(open(out / "kernelbench_timing.json"))
    assert results_doc.problems(doc) == [], doc
    f = doc["figures"]
    assert f["tasks_count"] == 1 and f["timed_count"] == 1 and f["left_count"] == 0, f
    assert f["eager_ratio_median"] == pytest.approx(row["eager_ratio"], rel=1e-3), f
    assert {"compile_ratio_p10", "compile_ratio_p90", "eager_ratio_vs_kb_median_median"} <= set(f), f
    # again: nothing left to do, nothing timed, the same record
    r = run_tool(*args, "--workers", "0", env=env)
    assert r.returncode == 0 and "0 in this run" in r.stderr, r.stderr
    assert len(open(out / "kernelbench_timing-0.jsonl").readlines()) == 1 and len(open(log).readlines()) == 2
    # --all takes the rejected task too; a budget already spent starts none and says so
    r = run_tool(*args, "--workers", "0", "--all", "--time-budget-s", "0.001", env=env)
    assert r.returncode == 0 and "stopped: time budget" in r.stdout, r.stdout
    assert json.load(open(out / "kernelbench_timing.json"))["figures"]["left_count"] == 1
    # rows of another shard's process (another GPU) count in the record; --record-only times nothing
    row2 = dict(row, id=REJECTED_ID, eager_ratio=2 * row["eager_ratio"])
    (out / "kernelbench_timing-1.jsonl").write_text(json.dumps(row2) + "\n")
    r = run_tool(*args, "--workers", "0", "--all", "--record-only", env=env)
    assert r.returncode == 0 and len(open(log).readlines()) == 2, r.stderr
    f = json.load(open(out / "kernelbench_timing.json"))["figures"]
    assert f["timed_count"] == 2 and f["left_count"] == 0 and f["eager_ratio_p90"] > f["eager_ratio_p10"], f
    # from kforge's export written beforehand, on a host without kforge: the same tasks
    exported = tmp_path / "export-gpu.jsonl"
    kforge("tasks", "export-gpu", str(setup / "imp" / "dataset.h5"), "--shard", "all/1", "--out", str(exported))
    (out / "kernelbench_timing.json").unlink()
    r = run_tool(*args, "--workers", "0", "--all", "--record-only", "--exported", exported,
                 env=dict(env, KFORGE_BIN=str(tmp_path / "no-kforge")))
    assert r.returncode == 0, r.stderr
    assert json.load(open(out / "kernelbench_timing.json"))["figures"]["timed_count"] == 2


def test_trials_are_cut_for_slow_tasks_only():
    import argparse

    import kernelbench_timing as kt
    a = argparse.Namespace(trials=100, max_variant_s=1.5)
    assert kt.kb_trials(a, 2.0) == 100 and kt.kb_trials(a, 30.0) == 50 and kt.kb_trials(a, 500.0) == 10
    assert kt.kb_trials(argparse.Namespace(trials=100, max_variant_s=0), 500.0) == 100


def test_errors_are_one_line(setup, tmp_path):
    r = run_tool("--kernelbench", tmp_path, "--dataset", setup / "imp" / "dataset.h5", "--out", tmp_path / "o", "--device", "cpu")
    assert r.returncode == 1 and "no src/kernelbench/timing.py" in r.stderr, r.stderr
    r = run_tool("--kernelbench", setup / "kb", "--dataset", setup / "imp" / "dataset.h5", "--gpu", tmp_path,
                 "--out", tmp_path / "o", "--device", "cpu")
    assert r.returncode == 1 and "no GPU stage records" in r.stderr, r.stderr


def real_checkout():
    for c in (os.environ.get("KFORGE_KERNELBENCH"), os.path.join(SOURCE_DIR, ".gpu", "kb")):
        if c and os.path.isfile(os.path.join(c, "src", "kernelbench", "timing.py")):
            return c
    return None


def test_the_real_kernelbench_timing_file_loads_alone_and_has_what_the_script_calls():
    path = real_checkout()
    if path is None:
        print("no KernelBench checkout ($KFORGE_KERNELBENCH or .gpu/kb with src/kernelbench/timing.py): skipped")
        pytest.skip("no KernelBench checkout ($KFORGE_KERNELBENCH or .gpu/kb)")
    import kernelbench_timing as kt
    kb = kt.load_kernelbench_timing(path)
    params = inspect.signature(getattr(kb, kt.TIMING_FN)).parameters
    assert list(params)[:2] == ["kernel_fn", "args"]
    assert {"num_warmup", "num_trials", "discard_first", "verbose", "device"} <= set(params), list(params)
    st = kb.get_timing_stats([1.0, 2.0, 3.0])
    assert st["mean"] == 2.0 and st["num_trials"] == 3 and st["min"] == 1.0, st
    assert "kernelbench" not in sys.modules  # the package (and its openai import) was not loaded
