"""The two timing loops, env/judge/timing.cpp (`kforge task run`) and tools/dataset/synth_gpu's Timer: the
same samples give the same statistics and the same settings the same stop (numbers). Then
tools/bench/timing_method.py and reference_vs_baseline.py's method check, without a GPU: the
method lines of both and of the shipped baselines read into the same fields; another setting,
flush or stopping rule is named; the bench passes on baselines measured with its config's
baseline_timing and fails, listing what differs, on baselines measured otherwise."""
import json
import lzma
import os
import subprocess
import sys

import pytest

KFORGE = os.environ.get("KFORGE_BIN", "kforge")
SOURCE_DIR = os.environ.get("KFORGE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(SOURCE_DIR, "tools", "bench"))
sys.path.insert(0, os.path.join(SOURCE_DIR, "tools", "dataset"))
import timing_method as tm  # noqa: E402

SETTINGS = {"warmup_count": 2, "warmup_ms": 1.0, "min_reps": 4, "max_reps": 9, "target_rse": 0.05, "budget_ms": 400.0,
            "l2_flush": True, "l2_flush_factor": 2.0}
BENCH = os.path.join(SOURCE_DIR, "tools", "bench", "reference_vs_baseline.py")


def cpp_run(tmp_path, settings=SETTINGS):
    """`kforge task run` of a sample on the CPU with these timing settings: its JSON."""
    cfg = tmp_path / "eval.yaml"
    cfg.write_text(json.dumps({"timing": settings}))
    r = subprocess.run([KFORGE, "task", "run", "softmax_rows", "--device", "cpu", "--check-dims", "--json", "--config", str(cfg)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def python_timer(settings=SETTINGS):
    import torch
    from synth_gpu.timing import Timer
    return Timer(torch, "cpu", settings)


def test_the_same_samples_give_the_same_numbers_in_both_writers(tmp_path):
    """Numbers, not descriptions. `kforge task run` stopped at three timed calls (min_reps = max_reps
    = 3: a loaded machine's outlier can push the RSE of three samples past any target below 1, so the
    count is fixed rather than left to the RSE rule) reports min, median and max: all three of its samples. The GPU
    stage's statistics (tools/dataset/synth_gpu/timing.py) of those samples give every figure the C++
    reported (the mean and std up to the summation order, which the JSON does not keep), and its
    loop with the same settings stops at the same n. tests/golden/timing_stats.json holds both
    statistics equal on more samples (python.golden_rules)."""
    import torch
    from synth_gpu.common import mean_std
    from synth_gpu.timing import measure, stats
    settings = dict(SETTINGS, min_reps=3, max_reps=3, target_rse=0.99)
    doc = cpp_run(tmp_path, settings)
    cpp = doc["timing"]
    assert cpp["n"] == 3 and cpp["min_ms"] <= cpp["median_ms"] <= cpp["max_ms"]
    samples = [cpp["min_ms"], cpp["median_ms"], cpp["max_ms"]]
    py = stats(samples)
    assert {k: py[k] for k in ("n", "min_ms", "median_ms", "max_ms", "p10_ms", "p90_ms")} == \
        {k: cpp[k] for k in ("n", "min_ms", "median_ms", "max_ms", "p10_ms", "p90_ms")}
    assert py["mean_ms"] == pytest.approx(cpp["mean_ms"], rel=1e-12)
    assert mean_std(samples)[1] == pytest.approx(cpp["std_ms"], rel=1e-12)
    assert py["rse"] == pytest.approx(cpp["rse"], rel=1e-12)
    if cpp["min_ms"] < cpp["median_ms"]:  # nearest rank would give the min itself
        assert py["p10_ms"] != cpp["min_ms"]
    (loop,) = measure(python_timer(settings), [lambda x: x + 1], lambda: (torch.zeros(4),))
    assert loop["n"] == cpp["n"]
    from synth_gpu.torch_env import apply_flags, flags_record
    apply_flags(torch)
    assert tm.flag_differences(flags_record(torch), doc["precision_flags"]) == []
    assert tm.flag_differences(dict(flags_record(torch), allow_tf32_cudnn="true"), doc["precision_flags"]) == [
        "allow_tf32_cudnn: a 'true' vs b 'false'"]
    assert tm.flag_differences({}, doc["precision_flags"])  # a record without the TF32 flags does not pass


def test_each_setting_is_named_when_it_differs(tmp_path):
    base = tm.parse(python_timer().method())
    for key, value in (("warmup_count", 3), ("warmup_ms", 50.0), ("min_reps", 10), ("max_reps", 100),
                       ("target_rse", 0.01), ("budget_ms", 3000.0)):
        other = tm.parse(python_timer(dict(SETTINGS, **{key: value})).method())
        assert tm.differences(base, other) == [f"{key}: a {SETTINGS[key]!r} vs b {value!r}"]
    cpp = tm.parse(cpp_run(tmp_path, dict(SETTINGS, min_reps=5))["timing"]["method"])
    assert tm.differences(base, cpp, names=("baseline", "reference")) == ["min_reps: baseline 4 vs reference 5"]


def test_cuda_lines_flush_kind_and_the_shipped_baselines():
    # The Timer's CUDA line, from its own method() with the state a CUDA device gives it.
    t = python_timer(dict(SETTINGS, warmup_count=3, warmup_ms=50, min_reps=10, max_reps=100, target_rse=0.01,
                          budget_ms=3000))
    # (A CUDA Timer holds a flush buffer and cudaCtxResetPersistingL2Cache; method() reads only that
    # they are there.)
    t.cuda, t.flush_bytes, t.reset_l2 = True, 120 << 20, object()
    py = tm.parse(t.method())
    assert (py["clock"], py["l2_flush"], py["flush_mib"], py["persisting_l2_reset"]) == ("cuda-events", "write", 120, True)
    # env/judge/timing.cpp's method_text on CUDA, for the same settings (one timed function).
    cpp = tm.parse("cuda-events per call on the current stream; L2 flushed (120 MiB written) and persisting L2 reset before "
                   "each call; 4 warm-up calls (>= 3 and >= 50 ms); median of n until rse < 1% (n >= 10) or 3000 ms or "
                   "n = 100")
    assert tm.differences(py, cpp) == []
    t.reset_l2 = None
    assert tm.differences(tm.parse(t.method()), cpp) == ["persisting_l2_reset: a False vs b True"]
    t.flush_bytes = 0
    assert tm.parse(t.method())["l2_flush"] == "none"
    # The shipped dataset's baselines: the tool before the package (a read-modify-write flush, no
    # persisting L2 reset, RSE <= target): the check says so.
    with lzma.open(os.path.join(SOURCE_DIR, "datasets", "synth", "tasks.jsonl.xz"), "rt") as f:
        shipped = json.loads(f.readline())["baseline"]["method"]
    old = tm.parse(shipped)
    assert old["l2_flush"] == "rmw" and old["warmup_count"] == 3 and old["max_reps"] == 100 and old["budget_ms"] == 3000
    diffs = tm.differences(old, cpp, names=("baseline", "reference"))
    assert "l2_flush: baseline 'rmw' vs reference 'write'" in diffs
    assert "persisting_l2_reset: baseline False vs reference True" in diffs
    for bad in ("", "timed somehow", "cuda-events per call on the current stream; 3 warm-up calls"):
        with pytest.raises(tm.MethodError):
            tm.parse(bad)


def test_the_bench_passes_on_the_same_method_and_fails_listing_what_differs(tmp_path):
    """A 3-task dataset measured in synth_gpu's CPU mode with a config's baseline_timing: the bench
    with that config agrees; with the shipped configs/synth.yaml it lists the settings and exits 1."""
    (tmp_path / "synth.yaml").write_text("seed: 7\ntarget_tasks: 3\nshard_candidates: 10\n")
    subprocess.run([KFORGE, "synth", "--config", str(tmp_path / "synth.yaml"), "--out", str(tmp_path / "ds"), "--quiet"],
                   check=True, capture_output=True, timeout=600)
    cfg = tmp_path / "timing.yaml"
    cfg.write_text("window_ms_low: 0\nwindow_ms_high: 1.0e+9\nbaseline_timing: {warmup_count: 1, warmup_ms: 1, "
                   "min_reps: 3, max_reps: 6, budget_ms: 500}\n")
    ds = str(tmp_path / "ds" / "dataset.h5")
    env = dict(os.environ, KFORGE_BIN=KFORGE)
    tool = [sys.executable, os.path.join(SOURCE_DIR, "tools", "dataset", "synth_gpu.py")]
    for cmd in (tool + [ds, "--device", "cpu", "--config", str(cfg), "--workers", "0", "--progress-s", "0", "--threads", "1"],
                tool + ["--merge", ds, "--allow-cpu", "--no-plots"]):
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
        assert r.returncode == 0, r.stdout + r.stderr

    def bench(*extra):
        return subprocess.run([sys.executable, BENCH, ds, "--kforge", KFORGE, "--n", "2", "--device", "cpu", "--check-dims",
                               "--json", str(tmp_path / "rvb.json"), *extra], capture_output=True, text=True, timeout=600)

    r = bench("--synth-config", str(cfg))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "with the baselines' timing settings" in r.stdout and "timing method: the same for the baseline and the " \
        "reference on all 2 task(s)" in r.stdout, r.stdout
    assert json.loads((tmp_path / "rvb.json").read_text())["figures"]["method_mismatch_tasks_count"] == 0
    r = bench()  # configs/synth.yaml: other counts than the ones the baselines were measured with
    assert r.returncode == 1, r.stdout + r.stderr
    assert "timing method: 2 of 2 task(s) measured differently:" in r.stdout, r.stdout
    for line in ("2 x min_reps: baseline 3 vs config 10", "2 x min_reps: baseline 3 vs reference 10",
                 "2 x max_reps: baseline 6 vs config 100", "2 x warmup_ms: baseline 1.0 vs config 50.0"):
        assert line in r.stdout, r.stdout
    doc = json.loads((tmp_path / "rvb.json").read_text())
    assert doc["figures"]["method_mismatch_tasks_count"] == 2 and doc["details"]["timing"]["min_reps"] == 10
    assert all("min_reps: baseline 3 vs config 10" in x["method_differences"] for x in doc["details"]["rows"])
