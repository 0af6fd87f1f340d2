"""tools/dataset/baseline_ray.py (issue 32: the GPU stage over every GPU of a Ray cluster) on a two-node
Ray cluster simulated on this machine (ray.cluster_utils.Cluster, CPU only: each node one CPU and one
unit of the custom resource `kforge_gpu`, the stage in its CPU mode), with the real stage and kforge:

- the rows spread over the two timing processes, one per node, each row measured once, in the key
  folder named by the GPU model, torch and CUDA version the rows record; merged per key;
- a timing process killed mid-run: its rows already written stay, the rest of its chunk goes to the
  other process in the same run, nothing is measured twice; then the driver itself killed mid-run and
  run again: the rerun does only what was not written.

The tests share one cluster and one 8-task dataset (a Ray node costs seconds to start on two cores). The
nodes run with TORCH_COMPILE_DISABLE=1: torch.compile is then the eager module, which takes the stage
from about 4 s a task to 0.5 s here; what is under test is the driver (placement, the split, collection,
losses, resumption, keys), and the stage's compile path has its own suites (python.synth_gpu_runs)."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from synth_tool import FAST, SOURCE_DIR, records

ray = pytest.importorskip("ray", reason="ray is not installed (tools/setup.sh's trainers step installs it)")
from ray.cluster_utils import Cluster  # noqa: E402

DRIVER = os.path.join(SOURCE_DIR, "tools", "dataset", "baseline_ray.py")
KFORGE = os.environ.get("KFORGE_BIN") or os.path.join(SOURCE_DIR, "build", "tools", "kforge")
GPU = {"kforge_gpu": 1}
N_TASKS = 8
# The stage's CPU mode, fast: few timed calls, compiles in the timing process (two cores for everything).
STAGE = [*FAST, "--workers", "0"]

sys.path.insert(0, os.path.join(SOURCE_DIR, "tools", "dataset"))
from baseline_ray.keys import key_of  # noqa: E402

sys.path.insert(0, os.path.join(SOURCE_DIR, "tests", "rollout"))
from shared_checks import pid_alive  # noqa: E402


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    d = tmp_path_factory.mktemp("baseline_ray")
    (d / "synth.yaml").write_text(f"seed: 7\ntarget_tasks: {N_TASKS}\nshard_candidates: 10\n")
    subprocess.run([KFORGE, "synth", "--config", str(d / "synth.yaml"), "--out", str(d / "ds"), "--quiet"], check=True,
                   capture_output=True)
    (d / "wide.yaml").write_text("window_ms_low: 0\nwindow_ms_high: 1.0e+9\n")
    return d


@pytest.fixture(scope="module")
def cluster():
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    os.environ["TORCH_COMPILE_DISABLE"] = "1"  # the nodes' processes inherit it (above)
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "resources": GPU, "include_dashboard": False})
    c.add_node(num_cpus=1, resources=GPU)
    c.wait_for_nodes()
    yield c
    c.shutdown()


def start(dataset, cluster, out, *args, stage=()):
    argv = [sys.executable, DRIVER, str(dataset / "ds" / "dataset.h5"), "--out", str(out), "--address", cluster.address,
            "--device", "cpu", "--resource", "kforge_gpu", "--config", str(dataset / "wide.yaml"), "--progress-s", "0.5",
            "--poll-s", "0.2", "--workdir", str(out / "nodes"), *args, "--", *STAGE, *stage]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(p, timeout=240):
    out, err = p.communicate(timeout=timeout)
    return p.returncode, err


def summary(out):
    try:
        with open(out / "baseline_ray_summary.json") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def rows_of(out):
    """{key: [records]} of every key folder under out."""
    return {k: records(out / k) for k in sorted(os.listdir(out)) if "__torch-" in k}


def wait_for(cond, timeout, what):
    t0 = time.monotonic()
    while True:
        got = cond()
        if got:
            return got
        assert time.monotonic() - t0 < timeout, f"timed out waiting for {what}"
        time.sleep(0.2)



def test_bad_inputs_are_one_line_errors(dataset, tmp_path):
    ds = str(dataset / "ds" / "dataset.h5")
    for args, needle in (([ds, "--out", str(tmp_path), "--device", "cpu"], "--device cpu needs --resource"),
                         ([str(tmp_path / "none.h5"), "--out", str(tmp_path)], "no such file"),
                         ([ds, "--out", str(tmp_path), "--merge"], "no key folder"),
                         ([ds, "--out", str(tmp_path), "--", "--shard", "1/2"], "--shard is the driver's to set")):
        r = subprocess.run([sys.executable, DRIVER, *args], capture_output=True, text=True, timeout=120)
        assert r.returncode == 1 and r.stderr.strip().startswith("baseline_ray: error: "), r.stderr
        assert len(r.stderr.strip().splitlines()) == 1 and needle in r.stderr, r.stderr


def test_kforge_baseline_is_the_driver(tmp_path):
    """`kforge baseline ARGS...` runs this driver with the project's Python, its help and errors as they are."""
    r = subprocess.run([KFORGE, "baseline", "--help"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "usage: baseline_ray.py" in r.stdout and "--merge" in r.stdout, r.stdout + r.stderr
    r = subprocess.run([KFORGE, "baseline", str(tmp_path / "none.h5"), "--out", str(tmp_path)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 1 and r.stderr.strip().startswith("baseline_ray: error: ") and "no such file" in r.stderr, r.stderr


def test_rows_spread_over_processes_on_two_nodes_in_the_key_folder(dataset, cluster, tmp_path):
    out = tmp_path / "out"
    rc, err = finish(start(dataset, cluster, out, "--limit", "4"))
    assert rc == 0, err
    s = summary(out)
    procs = s["processes"]
    assert len(procs) == 2 and len({p["node_id"] for p in procs}) == 2, procs
    by_key = rows_of(out)
    assert len(by_key) == 1, by_key.keys()
    (key, rows), = by_key.items()
    # The folder is named by what the rows record: GPU model, torch, CUDA.
    envs = {(r["env"]["gpu"], r["env"]["torch"], r["env"]["cuda"]) for r in rows}
    assert len(envs) == 1
    gpu, torch_v, cuda = envs.pop()
    assert key == key_of({"gpu": gpu, "torch": torch_v, "cuda": cuda})
    assert key.startswith("none-cpu") and f"__torch-{torch_v.replace('+', '-').lower()}" in key
    # Four rows, each once, two by each process (one chunk each), in one part file per process.
    ids = [r["id"] for r in rows]
    assert len(ids) == 4 and len(set(ids)) == 4
    per_file = {f: len(records_of_file(out / key / f)) for f in os.listdir(out / key) if f.startswith("part-")}
    assert sorted(per_file.values()) == [2, 2], per_file
    assert sorted(p["rows"] for p in procs) == [2, 2]
    k = s["keys"][key]
    assert s["finished"] and k["rows_this_run"] == 4 and k["written"] == 4 and k["nodes"] == 2
    assert k["rows_per_gpu_hour"] >= k["rows_per_gpu_hour_held"] > 0 and k["goal"]["projected_wall_h"] > 0
    assert "rows/GPU-h" in err and f"baseline_ray: done: {key}: 4 row(s) this run on 2 GPU process(es), 2 node(s)" in err

    # A rerun with a larger limit skips the four already written.
    rc, err = finish(start(dataset, cluster, out, "--limit", "1"))
    assert rc == 0, err
    assert f"{N_TASKS} row(s) in this run's list, 4 already written, 1 to do" in err
    rows = rows_of(out)[key]
    assert len(rows) == 5 and len({r["id"] for r in rows}) == 5

    # The merge of the key: a copy of the dataset with these rows' baselines.
    r = subprocess.run([sys.executable, DRIVER, str(dataset / "ds" / "dataset.h5"), "--out", str(out), "--merge",
                        "--allow-cpu", "--config", str(dataset / "wide.yaml")], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "merged 5 record(s)" in r.stdout, r.stdout
    merged = json.loads((out / key / "summary.json").read_text())["gpu"]
    assert merged["measured"] == 5 and merged["gpu"] == gpu and merged["torch"] == torch_v


def records_of_file(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.endswith("\n")]


def test_a_process_killed_mid_run_loses_only_its_unwritten_rows_and_a_killed_driver_resumes(dataset, cluster, tmp_path):
    out = tmp_path / "out"
    # Half a second of warm-up per task: a process's chunk (four rows) lasts a few seconds.
    p = start(dataset, cluster, out, stage=["--warmup-ms", "500"])
    # Once the first row of some process is written, kill that process (the Ray actor's worker process).
    victim = wait_for(lambda: next((q for q in (summary(out) or {}).get("processes", []) if q["rows"] >= 1 and q["busy"]
                                    and q["stage_pid"]), None), 150, "a process's first row")
    os.kill(victim["pid"], signal.SIGKILL)
    rc, err = finish(p)
    assert rc == 0, err
    assert f"process {victim['slot']} on" in err and "lost" in err
    s = summary(out)
    gone = next(q for q in s["processes"] if q["slot"] == victim["slot"])
    assert not gone["alive"] and gone["error"].startswith("lost")
    wait_for(lambda: not pid_alive(victim["stage_pid"]), 30, "the killed process's stage to end with it")
    (key, rows), = rows_of(out).items()
    ids = [r["id"] for r in rows]
    # Everything in the end, each row written once; the killed process's rows stay.
    assert sorted(ids) == sorted(set(ids)) and len(ids) == N_TASKS, ids
    assert gone["rows"] >= 1 and len(records_of_file(out / key / f"part-{victim['slot']}.jsonl")) == gone["rows"]
    # The rest of its chunk was done by the other process, in the same run.
    assert gone["rows"] < N_TASKS // 2 and "of its chunk go back to the queue" in err, err
    other = next(q for q in s["processes"] if q["slot"] != victim["slot"])
    assert other["alive"] and other["rows"] == N_TASKS - gone["rows"] and other["chunks"] >= 2, other
    assert s["keys"][key]["written"] == N_TASKS

    # The driver killed mid-run (its actors and their stages die with it), then run again: the rerun
    # measures exactly the rows not written, and nothing twice.
    out2 = tmp_path / "out2"
    p = start(dataset, cluster, out2)
    wait_for(lambda: sum(len(v) for v in rows_of(out2).values()) >= 2 if out2.exists() else False, 150, "two rows")
    p.send_signal(signal.SIGKILL)
    p.communicate()
    # Its actors, and their stages with them, end: nothing goes on timing for a driver that is gone.
    for q in summary(out2)["processes"]:
        wait_for(lambda: not (q["stage_pid"] and pid_alive(q["stage_pid"])) and not pid_alive(q["pid"]), 60,
                 f"process {q['slot']} to end with its driver")
    before = {r["id"] for rows in rows_of(out2).values() for r in rows}
    assert 2 <= len(before) < N_TASKS
    rc, err = finish(start(dataset, cluster, out2))
    assert rc == 0, err
    assert f"{len(before)} already written, {N_TASKS - len(before)} to do" in err
    (key2, rows), = rows_of(out2).items()
    ids = [r["id"] for r in rows]
    assert key2 == key and len(ids) == N_TASKS and len(set(ids)) == N_TASKS, ids
