"""tools/dataset/synth_gpu.py (the GPU stage of the synthesizer) in its CPU mode, whole runs on a tiny
dataset made by `kforge synth`: records and their phases, the window rejection, the time budget and
--limit, a run killed after a row and resumed without redoing it, the merge back into dataset.h5
(and into each spec, which kforge's task parser must still accept), planted faults for each
GPU-stage filter, and overlap against no overlap. No GPU needed."""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import h5py
import pytest
import yaml

from synth_tool import (FAST, N_TASKS, SOURCE_DIR, TOOL, fresh_copy, kforge, make_dataset, one_error_line, records, tool,
                        tool_start, tool_wait)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return make_dataset(tmp_path_factory)


# -- runs ---------------------------------------------------------------------------------------

PHASES = {"mem_wait", "exec_build", "checks", "probe_timing", "compile_warm", "lock_wait", "timing", "release", "other"}


def check_phases(recs):
    """Every record says where its serial seconds went: phases that add up to wall_s."""
    for x in recs:
        ph = x["phase_s"]
        assert set(ph) <= PHASES and "other" in ph, ph
        assert all(v >= 0 for v in ph.values()), ph
        assert sum(ph.values()) <= x["wall_s"] + 0.005, (ph, x["wall_s"])
        assert sum(ph.values()) >= x["wall_s"] - 0.005, (ph, x["wall_s"])
        if x["status"] == "ok":
            assert {"exec_build", "checks", "probe_timing", "compile_warm", "timing"} <= set(ph), ph
            assert ph["timing"] > 0 and ph["compile_warm"] > 0
            assert x["compile_warm_s"] <= ph["compile_warm"] + 0.002

def test_window_rejection_limit_budget_and_merge_counts(dataset, tmp_path):
    ds = fresh_copy(dataset, tmp_path)
    out = tmp_path / "ds" / "gpu"
    # A budget too small for one task: nothing starts, the run says so.
    r = tool(ds, "--device", "cpu", "--config", dataset / "narrow.yaml", "--workers", "0", "--time-budget-s", "1", *FAST)
    assert "stopped: time budget" in r.stdout and records(out) == []
    # --limit: one row of shard 1/2; then all/2 does every shard left, each into its own part file.
    # The narrow window rejects every task (by the probe, before anything is compiled).
    tool(ds, "--device", "cpu", "--config", dataset / "narrow.yaml", "--workers", "0", "--shard", "1/2", "--limit", "1",
         *FAST)
    assert [x["row"] for x in records(out)] == [N_TASKS // 2]
    assert (out / "part-1.jsonl").read_text().count("\n") == 1
    r = tool(ds, "--device", "cpu", "--config", dataset / "narrow.yaml", "--workers", "0", "--shard", "all/2", *FAST)
    assert f"{N_TASKS - 1} to do" in r.stderr and "1 already written" in r.stderr
    assert sorted(os.listdir(out)) == ["part-0.jsonl", "part-1.jsonl"]
    recs = records(out)
    assert sorted(x["row"] for x in recs) == list(range(N_TASKS))
    assert all(x["shard"] == f"{0 if x['row'] < N_TASKS // 2 else 1}/2" for x in recs)
    assert len(recs) == N_TASKS and len({x["id"] for x in recs}) == N_TASKS
    for x in recs:
        assert x["status"] == "rejected:eager_runtime_window" and x["reason"] == "eager_runtime_window"
        assert x["eager_ms"] > 0 and x["window_ms"] == [1e6, 1e7] and "compile_ms" not in x
        assert x["dims"] == "check" and "NO cache flush" in x["method"] and x["env"]["device"] == "cpu"
        assert x["flags"]["allow_tf32_cublas"] == "false" and x["flags"]["allow_tf32_cudnn"] == "false"
        assert x["flags"]["overlap"] == "false"  # --workers 0: nothing to overlap
        assert {"exec_build", "checks", "probe_timing"} <= set(x["phase_s"]) and "timing" not in x["phase_s"]
    check_phases(recs)
    # Merge refuses CPU records unless told; then counts the rejections.
    one_error_line(tool("--merge", ds, check=False), "--device cpu", "--allow-cpu")
    r = tool("--merge", ds, "--allow-cpu", "--no-plots")
    assert "rejected: eager_runtime_window" in r.stdout
    s = json.load(open(tmp_path / "ds" / "summary.json"))
    assert s["drawn"] > 0  # the CPU summary is kept
    g = s["gpu"]
    assert g["rejected"]["eager_runtime_window"] == N_TASKS and g["kept"] == 0 and g["pending"] == 0
    with h5py.File(ds) as f:
        assert all(x == "rejected:eager_runtime_window" for x in f["tasks/status"].asstr()[:])
        assert all("baselines:" not in x for x in f["tasks/spec_yaml"].asstr()[:])
        assert f.attrs["gpu_stages"].startswith("done: ")
        assert json.loads(f.attrs["summary_json"])["gpu"]["rejected"]["eager_runtime_window"] == N_TASKS
    assert kforge("tasks", "count", str(ds), "--status", "all").stdout == f"{N_TASKS}\n"
    assert kforge("tasks", "count", str(ds)).stdout == "0\n"  # a rejected row only when asked for
    # A record of another task that happens to share an id is neither skipped by a run nor merged.
    part0 = out / "part-0.jsonl"
    lines = part0.read_text().splitlines(keepends=True)
    other = dict(json.loads(lines[0]), graph_hash="0" * 16, status="ok", reason="", compile_ms=1.0)
    part0.write_text(json.dumps(other) + "\n" + "".join(lines[1:]))
    r = tool(ds, "--device", "cpu", "--config", dataset / "narrow.yaml", "--workers", "0", "--shard", "all/2", *FAST)
    assert "1 to do" in r.stderr
    r = tool("--merge", ds, "--allow-cpu", "--no-plots")
    assert "ignored 1 record(s) of another task" in r.stdout
    with h5py.File(ds) as f:
        assert all(x == "rejected:eager_runtime_window" for x in f["tasks/status"].asstr()[:])
    # The plots of the GPU stage (when matplotlib is there).
    r = subprocess.run([sys.executable, os.path.join(SOURCE_DIR, "tools", "dataset", "synth_plots.py"),
                        str(tmp_path / "ds" / "summary.json"), "--out", str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    if "matplotlib is not installed" not in r.stdout:
        for name in ("gpu_rejections.png", "eager_runtime.png", "compile_speedup.png"):
            assert (tmp_path / name).stat().st_size > 1000


def test_no_probe_lets_the_final_timing_decide_and_stops_tasks_far_above(dataset, tmp_path):
    """--probe-n 0 (one GPU turn per task): no probe timing; a task below the window is compiled and
    timed in full, then rejected by its median; one far above is stopped after two warm-up calls."""
    ds = fresh_copy(dataset, tmp_path)
    out = tmp_path / "below"
    tool(ds, "--device", "cpu", "--config", dataset / "narrow.yaml", "--workers", "0", "--probe-n", "0", "--limit", "2",
         "--out", out, *FAST)
    recs = records(out)
    assert len(recs) == 2
    for x in recs:
        assert x["status"] == "rejected:eager_runtime_window" and "probe" not in (x.get("note") or ""), x
        assert x.get("probe_eager_ms") is None and x["compile_ms"] > 0 and x["eager"]["n"] >= 3
        assert "probe_timing" not in x["phase_s"] and x["phase_s"]["timing"] > 0
    (tmp_path / "tiny.yaml").write_text("window_ms_low: 0\nwindow_ms_high: 1.0e-6\n")
    out = tmp_path / "above"
    tool(ds, "--device", "cpu", "--config", tmp_path / "tiny.yaml", "--workers", "0", "--probe-n", "0", "--limit", "2",
         "--out", out, *FAST, "--warmup-calls", "3")
    recs = records(out)
    assert len(recs) == 2
    for x in recs:
        assert x["status"] == "rejected:eager_runtime_window" and "eager" not in x, x
        assert x["note"].startswith("stopped after 2 warm-up calls, each above 1.25e-06 ms"), x["note"]
        assert x["eager_ms"] > 1.25e-6
    one_error_line(tool(ds, "--device", "cpu", "--probe-n", "-1", check=False), "--probe-n must be >= 0")


def test_killed_run_resumes_without_redoing_and_merges(dataset, tmp_path):
    ds = fresh_copy(dataset, tmp_path)
    out = tmp_path / "ds" / "gpu"
    part = out / "part-0.jsonl"
    args = [sys.executable, TOOL, str(ds), "--device", "cpu", "--config", str(dataset / "wide.yaml"),
            "--workers", "1", *FAST]
    # A cache of its own: a hit in the timing process then comes from the compile worker.
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor_cache"))
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True, env=env)
    try:
        deadline = time.monotonic() + 400
        while time.monotonic() < deadline and p.poll() is None:
            if part.exists() and part.read_text().count("\n") >= 1:
                break
            time.sleep(0.2)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)  # the run and its compile worker
        p.communicate()
    first = records(out)
    assert 1 <= len(first) < N_TASKS, "the run finished before it could be killed"
    with open(part, "a") as f:
        f.write('{"id": "torn')  # as if killed in the middle of a write
    r = tool(*args[2:], env=env)
    assert f"{len(first)} already written" in r.stderr, r.stderr
    assert "synth_gpu: shard 0/1 |" in r.stderr  # progress lines
    recs = records(out)
    assert len(recs) == N_TASKS and len({x["id"] for x in recs}) == N_TASKS
    assert recs[:len(first)] == first  # not redone
    ok = [x for x in recs if x["status"] == "ok"]
    assert ok, [x.get("error") or x["status"] for x in recs]
    check_phases(recs)
    assert all(x["flags"]["overlap"] == "true" for x in recs)  # the default with a worker
    assert "synth_gpu: time (s): elapsed" in r.stderr and "compile workers: 1 x" in r.stderr
    for x in ok:
        assert x["eager_ms"] > 0 and x["compile_ms"] > 0 and x["eager"]["n"] >= 3 and x["compile"]["n"] == x["eager"]["n"]
        assert all(c["zeros_fail"] >= 0.01 for c in x["checks"].get("informative", []))
    assert any(x.get("compile_cache", {}).get("fxgraph_hit") for x in ok)  # the worker warmed Inductor's cache

    r = tool("--merge", ds, "--allow-cpu", "--no-plots")
    assert "torch.compile speedup" in r.stdout and "eager runtime" in r.stdout
    by_id = {x["id"]: x for x in recs}
    with h5py.File(ds) as f:
        t = f["tasks"]
        ids = list(t["id"].asstr()[:])
        for i, tid in enumerate(ids):
            x = by_id[tid]
            assert t["status"].asstr()[i] == x["status"]
            b = json.loads(t["baseline_json"].asstr()[i])
            assert b["method"] == x["method"] and b["flags"]["allow_tf32_cudnn"] == "false"
            if x["status"] == "ok":
                assert t["eager_ms"][i] == x["eager_ms"] and t["compile_ms"][i] == x["compile_ms"]
                assert yaml.safe_load(t["spec_yaml"].asstr()[i])["baselines"]["gpu"].startswith("none (cpu")
        g = json.loads(f.attrs["summary_json"])["gpu"]
        assert g["kept"] == len(ok) and g["measured"] == N_TASKS
        assert sum(g["compile_speedup"].values()) == len(ok) and sum(g["eager_runtime_ms"].values()) == len(ok)
        assert g["eager_over_estimate"]["n"] == len(ok)
        # The shipped tasks' own distributions: the kept ones, by the dataset's columns.
        col = {k: dict(zip(ids, t[k].asstr()[:] if k != "n_ops" else map(str, t[k][:]))) for k in ("n_ops", "split", "dtype")}
        for key, k in (("kept_ops_per_task", "n_ops"), ("kept_splits", "split"), ("kept_dtypes", "dtype")):
            want = {}
            for x in ok:
                want[col[k][x["id"]]] = want.get(col[k][x["id"]], 0) + 1
            assert g[key] == want, (key, g[key], want)
    table = (tmp_path / "ds" / "summary.txt").read_text()
    assert "operators per task (kept)" in table and "splits (kept)" in table
    # kforge still reads the dataset, and its task parser accepts every spec with its baselines.
    assert kforge("tasks", "count", str(ds), "--status", "all").stdout == f"{N_TASKS}\n"
    assert kforge("tasks", "count", str(ds)).stdout == f"{len(ok)}\n"  # the rejected rows left out
    listed = {ln.split()[0]: ln.split() for ln in kforge("tasks", "list", str(ds)).stdout.splitlines()}
    assert {tid: (v[2], v[5]) for tid, v in listed.items()} == {x["id"]: ("ok", f"{x['eager_ms']:.2f}") for x in ok}
    kb = tmp_path / "kb"
    kforge("tasks", "export", str(ds), "--format", "kernelbench", "--out", str(kb), "--specs")
    for x in ok:
        shown = kforge("task", "show", str(kb / (x["id"] + ".yaml"))).stdout
        assert "baselines:" in shown and "eager_ms:" in shown and "CPU MODE" in shown
    # Merging again changes nothing.
    with h5py.File(ds) as f:
        before = list(f["tasks/spec_yaml"].asstr()[:])
    tool("--merge", ds, "--allow-cpu", "--no-plots")
    with h5py.File(ds) as f:
        assert list(f["tasks/spec_yaml"].asstr()[:]) == before


# -- planted faults: each GPU-stage filter and the compile pool's failure paths ----------------------

def program(forward, head=""):
    return f"""import time
import torch
import torch.nn as nn
{head}

@torch._dynamo.disable
def boom():
    raise RuntimeError("planted compile failure")


class Model(nn.Module):
    def forward(self, x):
{forward}


def get_inputs():
    return [torch.randn(64, 64)]


def get_init_inputs():
    return []
"""


def plant(ds, programs):
    with h5py.File(ds, "r+") as f:
        col = f["tasks/program_py"]
        for i, p in enumerate(programs):
            col[i] = p


def test_planted_faults_are_rejected_and_counted(dataset, tmp_path):
    # Torch.compile failing (only when compiled), torch.compile hanging (killed by the timeout, the
    # worker restarted: 20 s, so that the planted failure of row 0 still fails before it on a loaded
    # 2-core runner, where 8 s did not), a nondeterministic forward, a constant answer.
    ds = fresh_copy(dataset, tmp_path)
    plant(ds, [program("        if torch.compiler.is_compiling():\n            boom()\n        return torch.relu(x) * 2"),
               program("        if torch.compiler.is_compiling():\n            time.sleep(120)\n        return torch.relu(x) * 2"),
               program("        return x + torch.rand_like(x)"),
               program("        return x * 0 + 1.0")])
    # A module that does not build, non-finite outputs, outputs that ignore the inputs, and one that
    # passes (compiled in this process: --workers 0).
    ds2 = tmp_path / "ds2"
    shutil.copytree(dataset / "ds", ds2)
    plant(ds2 / "dataset.h5", [program("        return x", head="raise ValueError('planted build failure')"),
                               program("        return x / 0.0"),
                               program("        return torch.arange(64.0) + 1"),
                               program("        return torch.relu(x) * 2")])
    first = tool_start(ds, "--device", "cpu", "--config", dataset / "wide.yaml", "--workers", "1", "--compile-timeout-s", "20",
                       *FAST)
    try:
        # Once row 0 is recorded its worker is on row 1's hang and that run waits for the timeout:
        # the second run goes meanwhile.
        out = tmp_path / "ds" / "gpu"
        deadline = time.monotonic() + 300
        while first.poll() is None and time.monotonic() < deadline and \
                not (out.is_dir() and any(x["row"] == 0 for x in records(out))):
            time.sleep(0.1)
        tool(ds2 / "dataset.h5", "--device", "cpu", "--config", dataset / "wide.yaml", "--workers", "0", *FAST)
    finally:
        tool_wait(first)
    by_row = {x["row"]: x for x in records(out)}
    assert by_row[0]["status"] == "rejected:torch_compile_build" and "planted compile failure" in by_row[0]["error"]
    assert by_row[1]["status"] == "rejected:torch_compile_build" and by_row[1]["error"].startswith("timeout")
    assert by_row[2]["status"] == "rejected:nondeterministic_gpu"
    assert by_row[3]["status"] == "rejected:near_constant_gpu"
    check_phases(by_row.values())
    by_row = {x["row"]: x for x in records(ds2 / "gpu")}
    assert by_row[0]["status"] == "rejected:build_failed" and "planted build failure" in by_row[0]["error"]
    assert by_row[1]["status"] == "rejected:nonfinite_gpu"
    assert by_row[2]["status"] == "rejected:invariant_to_inputs_gpu"
    assert by_row[3]["status"] == "ok" and by_row[3]["compile_ms"] > 0
    r = tool("--merge", ds2 / "dataset.h5", "--allow-cpu", "--no-plots", "--results", tmp_path / "res.json")
    g = json.load(open(ds2 / "summary.json"))["gpu"]
    res = json.load(open(tmp_path / "res.json"))
    assert set(res) == {"gpu", "driver", "cuda", "torch", "date", "commit", "command", "figures"}
    assert res["figures"]["tasks_kept_count"] == 1 and res["figures"]["rejected_nonfinite_gpu_count"] == 1
    assert g["kept"] == 1 and g["pending"] == 0
    assert {k: v for k, v in g["rejected"].items() if v} == {"build_failed": 1, "nonfinite_gpu": 1,
                                                             "invariant_to_inputs_gpu": 1}
    assert "rejected: nonfinite_gpu" in r.stdout


def test_overlap_gives_the_rows_of_no_overlap_and_never_samples_next_to_a_worker(dataset, tmp_path):
    # Six tasks: a compile failure, a near-constant answer, four real ones (ok in the wide window).
    # The same input with overlap (the workers compile while this process times; pinned: one CPU
    # for the timing process, the other for the worker) and without.
    d = tmp_path / "six"
    d.mkdir()
    (d / "synth.yaml").write_text("seed: 11\ntarget_tasks: 6\nshard_candidates: 12\n")
    kforge("synth", "--config", str(d / "synth.yaml"), "--out", str(d / "ds"), "--quiet")
    compiling_boom = "        if torch.compiler.is_compiling():\n            boom()\n        return torch.relu(x) * 2"
    plant(d / "ds" / "dataset.h5", [program(compiling_boom),
                                     program("        return x * 0 + 1.0")])
    shutil.copytree(d / "ds", d / "ds2")
    log = tmp_path / "lock.log"
    slow = FAST + ["--min-n", "20", "--max-n", "30"]  # longer sampling: more of it next to a compile
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor_cache"), KFORGE_SYNTH_GPU_LOCK_LOG=str(log))
    r = tool(d / "ds" / "dataset.h5", "--device", "cpu", "--config", dataset / "wide.yaml", "--workers", "1",
             "--reserved-cores", "1", *slow, env=env)
    assert "overlapping the timing" in r.stderr and "synth_gpu: round 1:" in r.stderr
    env.pop("KFORGE_SYNTH_GPU_LOCK_LOG")
    r2 = tool(d / "ds2" / "dataset.h5", "--device", "cpu", "--config", dataset / "wide.yaml", "--workers", "1",
              "--no-overlap", *slow, env=env)
    assert "no overlap" in r2.stderr and "this process idle" in r2.stderr
    a = {x["row"]: x for x in records(d / "ds" / "gpu")}
    b = {x["row"]: x for x in records(d / "ds2" / "gpu")}
    assert sorted(a) == sorted(b) == list(range(6))
    assert {k: x["status"] for k, x in a.items()} == {k: x["status"] for k, x in b.items()}
    assert a[0]["status"] == "rejected:torch_compile_build" and a[1]["status"] == "rejected:near_constant_gpu"
    assert sum(x["status"] == "ok" for x in a.values()) == 4
    for k in a:  # the same checks, to the element
        assert a[k]["checks"] == b[k]["checks"] and a[k].get("error") == b[k].get("error")
    assert all(x["flags"]["overlap"] == "true" for x in a.values())
    assert all(x["flags"]["overlap"] == "false" for x in b.values())
    check_phases(a.values())
    check_phases(b.values())
    for x in a.values():
        if x["status"] == "ok":
            assert x["compile_cache"]["fxgraph_hit"] >= 1  # the worker's backend fills the same cache entries
            assert set(x["compile_worker_s"]) == {"lock_wait", "gpu_turn", "compile", "release", "other"}
            assert x["compile_queue_s"] >= 0 and x["env"]["main_cpus"] != "all"
    # The GPU turn: every worker GPU step started with nobody sampling, and whenever the timing
    # process said it was sampling, the turn was taken (the watcher could not get it).
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(lines) == 5  # every task but the one the probe rejected
    assert all(x["sampling_at_turn"] == [0, 0] for x in lines), lines
    assert all(x["watch_free_while_sampling"] == 0 for x in lines), lines
    assert sum(x["watch_seen"] for x in lines) > 0, "no compile ran while the timing process sampled"
    # --compare: the two runs, task by task.
    r = tool(d / "ds" / "dataset.h5", "--compare", d / "ds2" / "gpu")
    assert "6 task(s) in both" in r.stdout and "statuses: 6 of 6 agree" in r.stdout
    assert "eager_ms new / reference (ok in both): median" in r.stdout and "(n 4)" in r.stdout
    assert "per ok task, median: " in r.stdout and "timing" in r.stdout
    one_error_line(tool(d / "ds" / "dataset.h5", "--compare", tmp_path / "nothing", check=False), "nothing",
                   "no part-*.jsonl files to compare")
    # Resume: nothing left to do in either mode.
    r = tool(d / "ds" / "dataset.h5", "--device", "cpu", "--config", dataset / "wide.yaml", "--workers", "1", *slow, env=env)
    assert "6 already written, 0 to do" in r.stderr
