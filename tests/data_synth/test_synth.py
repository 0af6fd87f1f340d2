"""`kforge synth` end to end on the CPU (a small run), the HDF5 dataset read with h5py, the
`kforge tasks` commands and exports, a bad config's one-line error, the plots tool; and the
synthesised tasks' rendered programs against the C++ reference (pip torch)."""
import json
import math
import os
import subprocess
import sys

import h5py
import pytest

from kforge_dump import SOURCE_DIR, run

CONFIG = """seed: 5
target_tasks: 40
shard_candidates: 30
"""


@pytest.fixture(scope="module")
def synth_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("synth")
    cfg = d / "synth.yaml"
    cfg.write_text(CONFIG)
    r = run("synth", "--config", str(cfg), "--out", str(d / "out"))
    assert "synth: shard" in r.stderr  # progress lines
    assert "candidates drawn" in r.stdout and "rejected: duplicate" in r.stdout and "operators per task" in r.stdout
    return d / "out"


def test_dataset_reads_with_h5py(synth_dir):
    with h5py.File(synth_dir / "dataset.h5", "r") as f:
        assert f.attrs["format"] == "kforge-dataset"
        t = f["tasks"]
        n = len(t["id"])
        assert n == 40
        for col in ("split", "spec_yaml", "program_py", "ops", "graph_hash", "op_sequence", "status", "baseline_json"):
            assert len(t[col]) == n, col
        ids = [x.decode() for x in t["id"][:]]
        assert len(set(ids)) == n
        assert len(set(h.decode() for h in t["graph_hash"][:])) == n  # no structural duplicates
        splits = [x.decode() for x in t["split"][:]]
        assert splits.count("heldout") >= math.ceil(0.05 * n)
        seq = [x.decode() for x in t["op_sequence"][:]]
        train = {s for s, sp in zip(seq, splits) if sp == "train"}
        assert not any(s in train for s, sp in zip(seq, splits) if sp == "heldout")
        assert all(math.isnan(x) for x in t["eager_ms"][:])  # baselines come from the GPU stage
        assert all(1 <= x <= 5 for x in t["n_ops"][:])
        program = t["program_py"][0].decode()
        assert "class Model(nn.Module)" in program and "def get_inputs()" in program
        summary = json.loads(f.attrs["summary_json"])
        assert summary["kept"] == n and summary["drawn"] >= n


def test_tasks_count_list_show(synth_dir):
    ds = str(synth_dir / "dataset.h5")
    total = run("tasks", "count", ds).stdout
    assert total == "40\n"
    train = int(run("tasks", "count", ds, "--split", "train").stdout)
    held = int(run("tasks", "count", ds, "--split", "heldout").stdout)
    assert train + held == 40 and held > 0
    two = int(run("tasks", "count", ds, "--min-ops", "2", "--max-ops", "2").stdout)
    assert 0 < two < 40
    lines = run("tasks", "list", ds, "--max-ops", "2").stdout.splitlines()
    assert len(lines) == int(run("tasks", "count", ds, "--max-ops", "2").stdout)
    first = lines[0].split()[0]
    assert all(ln.split()[2] == "cpu_ok" and ln.split()[5] == "-" for ln in lines)  # status, eager ms: no GPU stage has run
    assert run("tasks", "count", ds, "--status", "all").stdout == "40\n" == run("tasks", "count", ds, "--status", "cpu_ok").stdout
    r = run("tasks", "count", ds, "--status", "kept", check=False)
    assert r.returncode != 0 and "--status is all, cpu_ok, ok, rejected or rejected:<filter>, not 'kept'" in r.stderr
    assert run("tasks", "show", ds, first).stdout.startswith("kforge_task: 1")
    assert "class Model" in run("tasks", "show", ds, first, "--program").stdout
    op = lines[0].split()[-1].split(",")[0]
    assert int(run("tasks", "count", ds, "--ops", op).stdout) >= 1


def test_exports(synth_dir, tmp_path):
    ds = str(synth_dir / "dataset.h5")
    run("tasks", "export", ds, "--format", "kernelbench", "--out", str(tmp_path / "kb"), "--specs")
    pys = [p for p in os.listdir(tmp_path / "kb") if p.endswith(".py")]
    assert len(pys) == 40
    run("tasks", "export", ds, "--format", "jsonl", "--split", "heldout", "--out", str(tmp_path / "h.jsonl"))
    rows = [json.loads(line) for line in open(tmp_path / "h.jsonl")]
    assert rows and all(r["split"] == "heldout" for r in rows)
    assert rows[0]["eager_ms"] is None and rows[0]["spec_yaml"].startswith("kforge_task: 1")


def test_rerun_resumes_and_gives_the_same_dataset(synth_dir, tmp_path):
    cfg = tmp_path / "synth.yaml"
    cfg.write_text(CONFIG)
    r = run("synth", "--config", str(cfg), "--out", str(synth_dir), "--quiet")
    assert "shards (resumed)" in r.stdout
    with h5py.File(synth_dir / "dataset.h5", "r") as f:
        assert len(f["tasks/id"]) == 40


def test_synthesised_programs_match_the_cpp_reference(synth_dir, tmp_path):
    """The consistency test over composed synthesised graphs (at their check dims)."""
    kb = tmp_path / "kb"
    run("tasks", "export", str(synth_dir / "dataset.h5"), "--format", "kernelbench", "--out", str(kb), "--specs",
        "--max-ops", "5")
    specs = sorted(str(kb / p) for p in os.listdir(kb) if p.endswith(".yaml"))[:12]
    env = dict(os.environ, KFORGE_CONSISTENCY_TASKS=os.pathsep.join(specs))
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        os.path.join(os.path.dirname(__file__), "test_consistency.py"), "-k", "syn5_"],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stdout[-3000:]
    assert "12 passed" in r.stdout, r.stdout[-500:]  # one per synthesised task


def test_bad_config_is_one_line_naming_key_file_and_line(tmp_path):
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("seed: 1\ncpu_check:\n  enabeld: true\n")
    r = run("synth", "--config", str(cfg), "--out", str(tmp_path / "o"), check=False)
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("kforge: config_error: ") and str(cfg) + ":3" in lines[0] and "enabeld" in lines[0]


def test_tasks_errors(tmp_path):
    junk = tmp_path / "junk.h5"
    junk.write_text("no")
    r = run("tasks", "count", str(junk), check=False)
    assert r.returncode == 1 and str(junk) in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_plots(synth_dir, tmp_path):
    r = subprocess.run([sys.executable, os.path.join(SOURCE_DIR, "tools", "dataset", "synth_plots.py"), str(synth_dir / "summary.json"),
                        "--out", str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        pytest.skip("matplotlib not installed: the tool says so and writes nothing")
    for name in ("rejections.png", "ops_per_task.png", "est_runtime.png"):
        assert (tmp_path / name).stat().st_size > 1000
