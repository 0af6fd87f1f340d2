"""tools/dataset/synth_dataset.sh, the driver that builds the shipped dataset over several device calls:
prepare (kforge synth), the GPU step (here in its CPU mode, at check dims), collect of a call's
archive, status, calls resuming where the last stopped (from the carried rows, or from SYNTH_KEEP
before a collect), an older archive collected late, the calls' report, finish (merge, JSONL
export, the xz-compressed dataset that kforge reads back, the README of its figures, and the
reference-against-baseline bench on it) and refilter (the input checks applied), every step with a
failing python3 first on PATH. No GPU needed."""
import json
import lzma
import os
import re
import subprocess
import sys

import h5py
import pytest

KFORGE = os.environ.get("KFORGE_BIN", "kforge")
SOURCE_DIR = os.environ.get("KFORGE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(SOURCE_DIR, "tools", "dataset", "synth_dataset.sh")
FAST = "--min-n 3 --max-n 8 --max-task-s 0.5 --warmup-calls 1 --warmup-ms 1 --progress-s 0 --threads 1 --workers 0"


def run(step, *args, env, check=True):
    r = subprocess.run(["bash", SCRIPT, step, *map(str, args)], capture_output=True, text=True, env=env, timeout=900)
    if check and r.returncode != 0:
        raise AssertionError(f"synth_dataset.sh {step} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return r


def measured(text):
    m = re.search(r"(\d+) of (\d+) rows measured \(ok (\d+), rejected (\d+)\); (\d+) left", text)
    assert m, text
    return tuple(int(x) for x in m.groups())


@pytest.fixture
def env(tmp_path):
    (tmp_path / "synth.yaml").write_text("seed: 7\ntarget_tasks: 4\nshard_candidates: 10\n")
    # Every step runs KFORGE_PYTHON_BIN (tools/python_env.sh): a python3 or python first on PATH fails.
    fake = tmp_path / "fakebin"
    fake.mkdir()
    for name in ("python", "python3"):
        (fake / name).write_text("#!/bin/sh\necho 'a bare python on PATH was run' >&2\nexit 97\n")
        (fake / name).chmod(0o755)
    e = dict(os.environ, KFORGE=os.path.abspath(KFORGE) if os.sep in KFORGE else KFORGE,
             KFORGE_PYTHON_BIN=sys.executable, PATH=f"{fake}:{os.environ.get('PATH', '/usr/bin:/bin')}",
             SYNTH_WORK=str(tmp_path / "work"), SYNTH_CONFIG=str(tmp_path / "synth.yaml"), SYNTH_DEVICE="cpu",
             SYNTH_DEST=str(tmp_path / "dest"), SYNTH_RESULTS=str(tmp_path / "results.json"),
             SYNTH_CALLS_RESULTS=str(tmp_path / "calls.json"),
             SYNTH_CHECK_ARGS="--min-heldout-pct 0")  # four tasks: heldout may hold none
    if os.sep not in KFORGE:  # on PATH: the script wants a path
        e["KFORGE"] = subprocess.run(["bash", "-c", f"command -v {KFORGE}"], capture_output=True, text=True).stdout.strip()
    return e


def test_prepare_two_resumed_calls_and_finish(env, tmp_path):
    # Nothing to work on yet: a clear error, not a stack trace.
    r = run("status", env=env, check=False)
    assert r.returncode == 2 and "run 'tools/dataset/synth_dataset.sh prepare' first" in r.stderr
    run("prepare", env=env)
    assert measured(run("status", env=env).stdout)[:2] == (0, 4)
    r = run("finish", env=env, check=False)
    assert r.returncode == 2 and "nothing measured yet" in r.stderr

    # First call stops after 1 task; its archive is all that comes back.
    out1 = tmp_path / "out1"
    out1.mkdir()
    run("gpu", 300, env=dict(env, OUT=str(out1), SYNTH_ARGS=FAST + " --limit 1"))
    assert sorted(os.listdir(out1)) == ["synth.tgz"]
    done, total, ok1, rej1, left = measured(run("collect", out1, env=env).stdout)
    assert (done, total, left) == (1, 4, 3)

    # Second call resumes from the carried rows, and keeps its parts in SYNTH_KEEP (the GPU host's
    # folder that outlives a call).
    keep = tmp_path / "keep"
    out2 = tmp_path / "out2"
    out2.mkdir()
    run("gpu", 300, env=dict(env, OUT=str(out2), SYNTH_KEEP=str(keep), SYNTH_ARGS=FAST + " --limit 1"))
    done, total, ok2, rej2, left = measured(run("collect", out2, env=env).stdout)
    assert (done, left) == (2, 2)
    # The older archive collected again loses no row.
    r = run("collect", out1, env=env)
    assert measured(r.stdout)[0] == 2 and "kept" in r.stdout
    # ... and its logs are not kept twice (the report would count its rows twice).
    assert "logs were collected before, as call-001" in r.stdout
    assert sorted(os.listdir(tmp_path / "work" / "logs")) == ["call-001", "call-002"]

    r = run("gpu", 300, env=dict(env, OUT=str(out2), SYNTH_PROCS="two"), check=False)
    assert r.returncode == 2 and "SYNTH_PROCS must be a positive integer" in r.stderr

    # Two processes (as on two GPUs) split the two rows left, one each, each into its own part
    # file; SYNTH_ARGS_1 reaches process 1 only (--limit 0: it measures nothing).
    out3 = tmp_path / "out3"
    out3.mkdir()
    r = run("gpu", 300, env=dict(env, OUT=str(out3), SYNTH_KEEP=str(keep), SYNTH_PROCS="2", SYNTH_ARGS=FAST,
                                 SYNTH_ARGS_1="--limit 0"))
    assert "2 of 4 rows left; 2 GPU(s), about 1 rows each" in r.stdout, r.stdout
    done, total, ok3, rej3, left = measured(run("collect", out3, env=env).stdout)
    assert (done, left) == (3, 1)
    assert sorted(os.listdir(tmp_path / "work" / "logs" / "call-003")) == ["log-0.txt", "log-1.txt"]

    # Fourth call made before the third was collected (here: the collected rows are gone): it
    # starts from the kept parts and redoes nothing.
    for name in os.listdir(tmp_path / "work" / "gpu"):
        os.remove(tmp_path / "work" / "gpu" / name)
    out4 = tmp_path / "out4"
    out4.mkdir()
    r = run("gpu", 300, env=dict(env, OUT=str(out4), SYNTH_KEEP=str(keep), SYNTH_PROCS="2", SYNTH_ARGS=FAST))
    assert "rows from " + str(keep) in r.stdout, r.stdout
    assert "1 of 4 rows left; 2 GPU(s)" in r.stdout, r.stdout
    done, total, ok, rej, left = measured(run("collect", out4, env=env).stdout)
    assert (done, total, left) == (4, 4, 0)
    ids, by_shard = [], {}
    for name in os.listdir(tmp_path / "work" / "gpu"):
        with open(tmp_path / "work" / "gpu" / name) as f:
            for line in f:
                rec = json.loads(line)
                ids.append(rec["id"])
                by_shard[rec["shard"]] = by_shard.get(rec["shard"], 0) + 1
    assert len(ids) == len(set(ids)) == 4, ids
    assert by_shard.get("0/2") == 1 and by_shard.get("1/2") == 1, by_shard

    # The report: every collected call's rows add up to the rows measured; a range picks calls.
    r = run("report", "", tmp_path / "report.json", env=env)
    assert "4 rows (" in r.stdout and "in 4 call(s)" in r.stdout, r.stdout
    assert "| call-003 | 1/2 | 0 |" in r.stdout, r.stdout  # the process given --limit 0
    rep = json.loads((tmp_path / "report.json").read_text())
    assert rep["figures"]["rows_count"] == 4 and rep["figures"]["rows_ok_count"] == ok
    assert all(isinstance(v, (int, float)) for v in rep["figures"].values()) and rep["details"]["calls"]
    r = run("report", "2-3", env=env)
    assert "2 rows (" in r.stdout and "in 2 call(s)" in r.stdout, r.stdout
    r = run("report", "9", env=env, check=False)
    assert r.returncode == 2 and "no call-NNN folders" in r.stderr

    # A missing archive is named.
    r = run("collect", tmp_path / "nowhere", env=env, check=False)
    assert r.returncode == 2 and "synth.tgz is missing" in r.stderr

    r = run("finish", env=env)
    assert "synth_check: every check passed" in r.stdout, r.stdout
    dest = tmp_path / "dest"
    assert (dest / "summary.txt").exists() and (dest / "summary.json").exists()
    (tmp_path / "back.h5").write_bytes(lzma.decompress((dest / "dataset.h5.xz").read_bytes()))
    count = subprocess.run([env["KFORGE"], "tasks", "count", str(tmp_path / "back.h5"), "--status", "ok"],
                           capture_output=True, text=True, check=True).stdout.split()
    assert count == [str(ok)]
    # kforge reads the shipped .h5.xz directly (through a temporary copy that it removes).
    shipped = subprocess.run([env["KFORGE"], "tasks", "count", str(dest / "dataset.h5.xz"), "--status", "ok"],
                             capture_output=True, text=True, check=True).stdout.split()
    assert shipped == [str(ok)]
    (tmp_path / "junk.h5.xz").write_bytes(b"not xz")
    r = subprocess.run([env["KFORGE"], "tasks", "count", str(tmp_path / "junk.h5.xz")], capture_output=True, text=True)
    assert r.returncode != 0 and "junk.h5.xz: xz could not decompress it" in r.stderr
    lines = lzma.decompress((dest / "tasks.jsonl.xz").read_bytes()).decode().splitlines()
    assert len(lines) == ok and all(json.loads(x)["status"] == "ok" for x in lines)
    results = json.loads((tmp_path / "results.json").read_text())
    assert "figures" in results
    # The dataset checks catch what they promise to: each planted fault is named, and finish ships
    # nothing from a dataset that fails them.
    check = os.path.join(SOURCE_DIR, "tools", "dataset", "synth_check.py")
    bad = tmp_path / "bad.h5"
    bad.write_bytes((tmp_path / "back.h5").read_bytes())
    with h5py.File(bad, "r+") as f:
        t = f["tasks"]
        st = list(t["status"].asstr()[:])
        k = [i for i, x in enumerate(st) if x == "ok"]
        assert k, st
        i = k[0]
        t["graph_hash"][1 if i == 0 else 0] = t["graph_hash"].asstr()[i]  # a structural duplicate
        t["eager_ms"][i] = 1e12                                             # outside any window
        b = json.loads(t["baseline_json"].asstr()[i])
        b["flags"]["allow_tf32_cublas"] = "true"                            # TF32 on
        t["baseline_json"][i] = json.dumps(b)
        t["status"][i] = "rejected:made_up"
    r = subprocess.run([sys.executable, check, bad], capture_output=True, text=True)
    assert r.returncode == 1, r.stdout + r.stderr
    for needle in ("structural duplicates", "status that is neither ok"):
        assert needle in r.stdout, r.stdout
    with h5py.File(bad, "r+") as f:
        f["tasks"]["status"][i] = "ok"
    r = subprocess.run([sys.executable, check, bad], capture_output=True, text=True)
    for needle in ("eager time outside", "TF32 allowed", "spec's baselines differ from the columns"):
        assert needle in r.stdout, r.stdout
    r = subprocess.run([sys.executable, check, tmp_path / "back.h5", "--min-heldout-pct", "101"], capture_output=True, text=True)
    assert r.returncode == 1 and "heldout is" in r.stdout, r.stdout
    r = run("finish", env=dict(env, SYNTH_CHECK_ARGS="--min-heldout-pct 101", SYNTH_DEST=str(tmp_path / "dest2")), check=False)
    assert r.returncode == 2 and "fails its checks" in r.stderr and not (tmp_path / "dest2" / "dataset.h5.xz").exists()

    # refilter: the input checks (kforge tasks sensitivity's JSONL) applied to the shipped dataset. A
    # line that says a row's input does not matter (here one planted failure of the row check)
    # makes it rejected:input_matters, its baselines kept; the README, summary and JSONL export say
    # so; --kinds whole takes the rejection back.
    checks = tmp_path / "checks.jsonl"
    subprocess.run([env["KFORGE"], "tasks", "sensitivity", str(dest / "dataset.h5.xz"), "--ablation-trials", "2",
                    "--out", str(checks)], capture_output=True, text=True, check=True)
    lines = [json.loads(x) for x in checks.read_text().splitlines()]
    assert len(lines) == ok and all(x["passed"] for x in lines), lines  # synthesised with the input checks on
    victim = lines[0]
    victim.update(passed=False, inputs_matter=False, reason_code="input_matters", reason="planted")
    victim["inputs"][0]["matters_row"] = False
    checks.write_text("".join(json.dumps(x) + "\n" for x in lines))
    r = run("refilter", checks, env=env)
    assert "synth_check: every check passed" in r.stdout, r.stdout
    assert f"{ok} row(s) decided: {ok - 1} kept, 1 input_matters, 0 ablation" in r.stdout, r.stdout
    shipped = subprocess.run([env["KFORGE"], "tasks", "count", str(dest / "dataset.h5.xz"), "--status", "rejected:input_matters"],
                             capture_output=True, text=True, check=True).stdout.split()
    assert shipped == ["1"]
    readme = (dest / "README.md").read_text()
    assert f"| kept by the GPU stage | {ok} |" in readme and f"| **kept (status `ok`)** | **{ok - 1}** |" in readme, readme
    assert json.loads((dest / "summary.json").read_text())["input_checks"]["rejected_by_kind"] == {"row": 1}
    assert len(lzma.decompress((dest / "tasks.jsonl.xz").read_bytes()).decode().splitlines()) == ok - 1
    assert lzma.decompress((dest / "input_checks.jsonl.xz").read_bytes()).decode() == checks.read_text()
    r = run("refilter", checks, env=dict(env, SYNTH_REFILTER_ARGS="--kinds whole"))
    assert f"{ok} row(s) decided: {ok} kept, 0 input_matters, 0 ablation" in r.stdout, r.stdout
    assert "Only failures of the kinds `whole` reject a row" in (dest / "README.md").read_text()
    checks.write_text("".join(json.dumps(x) + "\n" for x in lines[1:]))
    r = run("refilter", checks, env=env, check=False)
    assert r.returncode != 0 and "no line for 1 row(s) to decide" in r.stderr, r.stderr

    # The reference against the stored eager baseline, on the shipped file (CPU mode: check dims),
    # timed with the settings the baselines were measured with (FAST's, as a config's baseline_timing).
    bench = os.path.join(SOURCE_DIR, "tools", "bench", "reference_vs_baseline.py")
    fast_cfg = tmp_path / "fast_timing.yaml"
    fast_cfg.write_text("baseline_timing: {warmup_count: 1, warmup_ms: 1, min_reps: 3, max_reps: 8, budget_ms: 500}\n")
    r = subprocess.run([sys.executable, bench, dest / "dataset.h5.xz", "--kforge", env["KFORGE"], "--n", "2", "--device", "cpu",
                        "--check-dims", "--json", tmp_path / "rvb.json", "--python-now", "--synth-args", FAST + " --dims check",
                        "--synth-config", fast_cfg], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "timing method: the same for the baseline and the reference on all" in r.stdout, r.stdout
    assert f"{min(2, ok)} of {ok} kept tasks" in r.stdout and "reference now / stored eager over" in r.stdout, r.stdout
    assert f"reference / Python eager now (C++ against Python, same machine) over {min(2, ok)} task(s)" in r.stdout, r.stdout
    rvb = json.loads((tmp_path / "rvb.json").read_text())
    assert rvb["figures"]["tasks_count"] == min(2, ok) and rvb["figures"]["ratio_median_ratio"] > 0
    assert rvb["figures"]["method_mismatch_tasks_count"] == 0
    assert rvb["figures"]["drift_median_ratio"] > 0 and rvb["figures"]["reference_over_python_now_median_ratio"] > 0
    for x in rvb["details"]["rows"]:  # the two parts multiply to the whole
        assert abs(x["drift"] * x["reference_over_python_now"] - x["ratio"]) <= 1e-9 * x["ratio"]
    r = subprocess.run([sys.executable, bench, tmp_path / "none.h5", "--kforge", env["KFORGE"]], capture_output=True, text=True)
    assert r.returncode == 2 and "no such file" in r.stderr
    # The folder's README carries the shipped files' own figures, and lists only files that are there.
    readme = (dest / "README.md").read_text()
    summary = json.loads((dest / "summary.json").read_text())
    assert f"**{ok} tasks** with eager and torch.compile baselines" in readme, readme[:400]
    assert f"| **kept (status `ok`)** | **{ok}** |" in readme and "Partial" not in readme
    assert f"| drawn | {summary['drawn']} |" in readme
    # ... and how long it took, from the collected calls (4 of them here, 2 with two processes).
    calls = json.loads((tmp_path / "calls.json").read_text())
    assert calls["figures"]["calls_count"] == 4 and calls["figures"]["rows_count"] == 4
    assert calls["figures"]["gpus_per_call_max_count"] == 2
    assert "## How long it took" in readme and "| GPU stage: device calls | 4 |" in readme, readme
    for split, n in summary["gpu"]["kept_splits"].items():
        assert f"| {split} | {n} |" in readme
    listed = re.findall(r"^\| `([^`]+)` \|", readme, re.M)
    assert "dataset.h5.xz" in listed and "tasks.jsonl.xz" in listed
    assert all((dest / name).exists() for name in listed), listed


def test_readme_of_a_partial_dataset_and_bad_input(tmp_path):
    readme = os.path.join(SOURCE_DIR, "tools", "dataset", "synth_readme.py")
    s = {"drawn": 10, "passed": 8, "kept": 6, "rejected": {"duplicate": 2},
         "gpu": {"tasks": 6, "measured": 4, "pending": 2, "kept": 3, "rejected": {"nonfinite_gpu": 1},
                 "kept_ops_per_task": {"1": 1, "2": 2}, "kept_splits": {"heldout": 1, "train": 2},
                 "kept_dtypes": {"float32": 3}, "kept_families": {"matmul": 3}, "gpu": "NVIDIA H200",
                 "window_ms": [1.0, 100.0], "method": "CUDA events", "flags": {"compile_mode": "default"}}}
    (tmp_path / "summary.json").write_text(json.dumps(s))
    (tmp_path / "dataset.h5.xz").write_bytes(b"x")
    r = subprocess.run([sys.executable, readme, tmp_path / "summary.json", tmp_path / "README.md"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "README.md").read_text()
    assert "**Partial:** the GPU stage has measured 4 of 6 candidates (2 pending); 3 are kept so far" in text
    assert "| not measured yet | 2 |" in text and "| rejected on the GPU: `nonfinite_gpu` | 1 |" in text
    assert "| heldout | 1 | 33.3 % |" in text and "lies in 1-100 ms" in text
    # Only files that are there are listed.
    assert "`dataset.h5.xz`" in text and "`tasks.jsonl.xz`" not in text
    (tmp_path / "bad.json").write_text("{}")
    r = subprocess.run([sys.executable, readme, tmp_path / "bad.json", tmp_path / "x.md"], capture_output=True, text=True)
    assert r.returncode == 2 and "not a kforge synth summary" in r.stderr and not (tmp_path / "x.md").exists()
