"""The commands the synthesizer's GPU stage (tools/dataset/synth_gpu/) asks of kforge, on a tiny dataset
made by `kforge synth`: `kforge tasks export-gpu` (the tasks as kforge resolves them, with the
settings of configs/synth.yaml), `kforge tasks set-baselines` (results into the HDF5 dataset) and
`kforge task set-baselines` (into a task file), with their typed one-line errors. No GPU needed."""
import json
import math
import os
import shutil
import subprocess

import h5py
import pytest
import yaml

KFORGE = os.environ.get("KFORGE_BIN", "kforge")
SOURCE_DIR = os.environ.get("KFORGE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
N_TASKS = 4


def kforge(*args, check=True):
    r = subprocess.run([KFORGE, *map(str, args)], capture_output=True, text=True)
    if check and r.returncode != 0:
        raise AssertionError(f"kforge {args} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return r


def error(r, kind, *needles):
    assert r.returncode != 0, r.stdout
    line = r.stderr.strip().splitlines()[-1]
    assert line.startswith(f"kforge: {kind}: "), line
    for n in needles:
        assert str(n) in line, line


def export(ds, *args):
    lines = kforge("tasks", "export-gpu", ds, *args).stdout.splitlines()
    return json.loads(lines[0]), [json.loads(x) for x in lines[1:]]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    d = tmp_path_factory.mktemp("gpu_stage_cli")
    (d / "synth.yaml").write_text(f"seed: 7\ntarget_tasks: {N_TASKS}\nshard_candidates: 10\n")
    kforge("synth", "--config", d / "synth.yaml", "--out", d / "ds", "--quiet")
    return d


def test_export_gives_each_task_as_kforge_resolves_it(dataset):
    ds = dataset / "ds" / "dataset.h5"
    settings, tasks = export(ds, "--config", os.path.join(SOURCE_DIR, "configs", "synth.yaml"))
    cfg = yaml.safe_load(open(os.path.join(SOURCE_DIR, "configs", "synth.yaml")))
    assert settings["kind"] == "settings" and settings["rows"] == N_TASKS and settings["shards"] == 1
    assert settings["window_ms"] == [cfg["window_ms_low"], cfg["window_ms_high"]]
    assert settings["min_informative_fraction"] == cfg["cpu_check"]["min_informative_fraction"]
    assert settings["timing"] == cfg["baseline_timing"]  # the pinned method's settings, as the file says
    assert json.loads(settings["summary_json"])["kept"] == N_TASKS
    with h5py.File(ds) as f:
        t = f["tasks"]
        cols = {c: list(t[c].asstr()[:]) for c in ("id", "graph_hash", "dtype", "program_py", "spec_yaml", "split")}
    assert [x["row"] for x in tasks] == list(range(N_TASKS)) and [x["id"] for x in tasks] == cols["id"]
    for x in tasks:
        i = x["row"]
        spec = yaml.safe_load(cols["spec_yaml"][i])
        assert x["kind"] == "task" and x["shard"] == 0 and x["status"] == "cpu_ok"
        assert (x["graph_hash"], x["dtype"], x["program_py"], x["split"]) == \
            (cols["graph_hash"][i], cols["dtype"][i], cols["program_py"][i], cols["split"][i])
        assert x["seed"] == spec["seed"] and x["dims"] == spec["dims"] and x["check_dims"] == spec["check_dims"]
        assert x["outputs"] == [{"name": o["name"], "shape": o["shape"], "dtype": o["dtype"]} for o in spec["outputs"]]
        assert x["tolerance"] == spec["tolerance"] and x["tolerance"]["atol"] > 0


def test_export_shards_ids_and_defaults(dataset, tmp_path):
    ds = dataset / "ds" / "dataset.h5"
    settings, every = export(ds, "--shard", "all/3")
    assert settings["timing"]["min_reps"] == 10 and settings["window_ms"] == [1.0, 100.0]  # defaults without --config
    assert [x["row"] for x in every] == list(range(N_TASKS))
    for k in range(3):
        _, part = export(ds, "--shard", f"{k}/3")
        assert part == [x for x in every if x["shard"] == k]
        assert [x["row"] for x in part] == list(range(k * N_TASKS // 3, (k + 1) * N_TASKS // 3))
    ids = tmp_path / "ids.txt"
    ids.write_text(f"{every[3]['id']}\n\n  {every[1]['id']}\n{every[3]['id']}\n")  # order kept, blanks and repeats dropped
    _, picked = export(ds, "--ids", ids, "--shard", "1/2")
    assert [(x["row"], x["shard"]) for x in picked] == [(3, 1), (1, 1)]
    out = tmp_path / "tasks.jsonl"
    kforge("tasks", "export-gpu", ds, "--out", out)
    assert out.read_text().count("\n") == N_TASKS + 1
    narrow = tmp_path / "narrow.yaml"
    narrow.write_text("window_ms_low: 3\nwindow_ms_high: 4\nbaseline_timing: {min_reps: 5, max_reps: 7}\n")
    s, _ = export(ds, "--config", narrow)
    assert s["window_ms"] == [3.0, 4.0] and s["timing"]["min_reps"] == 5 and s["timing"]["max_reps"] == 7
    assert s["timing"]["warmup_ms"] == 50.0  # the keys left out keep the stage's defaults, not the evaluator's


def test_export_errors_are_one_typed_line(dataset, tmp_path):
    ds = dataset / "ds" / "dataset.h5"
    error(kforge("tasks", "export-gpu", tmp_path / "none.h5", check=False), "io_error", "none.h5", "no such file")
    for bad in ("4/4", "1", "a/b", "0/0", "-1/2"):
        error(kforge("tasks", "export-gpu", ds, "--shard", bad, check=False), "usage_error", "--shard", bad)
    ids = tmp_path / "ids.txt"
    ids.write_text("not_a_task\n")
    error(kforge("tasks", "export-gpu", ds, "--ids", ids, check=False), "usage_error", "ids.txt", "1 id(s) not in", "not_a_task")
    error(kforge("tasks", "export-gpu", ds, "--ids", ids, "--shard", "all/2", check=False), "usage_error", "--ids takes --shard k/N")
    error(kforge("tasks", "export-gpu", ds, "--ids", tmp_path / "nope", check=False), "io_error", "nope", "cannot read")
    bad = tmp_path / "bad.yaml"
    bad.write_text("baseline_timing: {min_reps: 1}\n")
    error(kforge("tasks", "export-gpu", ds, "--config", bad, check=False), "config_error", "bad.yaml", "min_reps")
    bad.write_text("baseline_timing: {l2_flush_factor: 1}\n")  # the flush writes at least twice the L2
    error(kforge("tasks", "export-gpu", ds, "--config", bad, check=False), "config_error", "l2_flush_factor")


def results(path, lines):
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def test_set_baselines_writes_rows_specs_and_attributes(dataset, tmp_path):
    shutil.copytree(dataset / "ds", tmp_path / "ds")
    ds = tmp_path / "ds" / "dataset.h5"
    _, tasks = export(ds)
    a, b = tasks[0], tasks[1]
    with h5py.File(ds) as f:
        specs_before = list(f["tasks/spec_yaml"].asstr()[:])
    base = {"eager_ms": 2.3456789, "compile_ms": 1.5, "gpu": "NVIDIA H200", "torch": "2.11.0", "cuda": "13.0",
            "method": 'cuda-events; "quoted": yes', "flags": {"allow_tf32_cublas": "false"}}
    src = results(tmp_path / "r.jsonl", [
        {"kind": "row", "id": a["id"], "graph_hash": a["graph_hash"], "status": "ok", "eager_ms": 2.3456789,
         "compile_ms": 1.5, "baseline": {"gpu": "NVIDIA H200", "n": 3}, "baselines": base},
        {"kind": "row", "id": b["id"], "graph_hash": b["graph_hash"], "status": "rejected:nonfinite_gpu",
         "eager_ms": None, "compile_ms": None, "baseline": {"error": "x"}},
        {"kind": "attrs", "attrs": {"gpu_stages": "partial: test", "summary_json": '{"gpu": {"kept": 1}}'}}])
    assert "2 row(s) and 1 attribute line(s)" in kforge("tasks", "set-baselines", ds, "--from", src).stdout
    with h5py.File(ds) as f:
        t = f["tasks"]
        assert f.attrs["gpu_stages"] == "partial: test" and json.loads(f.attrs["summary_json"]) == {"gpu": {"kept": 1}}
        assert f.attrs["format"] == "kforge-dataset" and f.attrs["config_yaml"]  # the others kept
        status, eager, comp = list(t["status"].asstr()[:]), t["eager_ms"][:], t["compile_ms"][:]
        specs, bj = list(t["spec_yaml"].asstr()[:]), list(t["baseline_json"].asstr()[:])
    i, j = a["row"], b["row"]
    assert status[i] == "ok" and eager[i] == 2.3456789 and comp[i] == 1.5 and json.loads(bj[i]) == {"gpu": "NVIDIA H200", "n": 3}
    assert status[j] == "rejected:nonfinite_gpu" and math.isnan(eager[j]) and math.isnan(comp[j]) and specs[j] == specs_before[j]
    assert [s for k, s in enumerate(specs) if k not in (i, j)] == [s for k, s in enumerate(specs_before) if k not in (i, j)]
    spec = yaml.safe_load(specs[i])
    assert spec["baselines"] == dict(base, eager_ms=2.34568)  # six significant digits
    before = yaml.safe_load(specs_before[i])
    spec.pop("baselines")
    assert spec == before
    assert kforge("tasks", "count", ds).stdout == f"{N_TASKS - 1}\n"  # the rejected row left out
    shown = kforge("tasks", "show", ds, a["id"]).stdout
    assert shown == specs[i] and "baselines:" in shown
    kforge("tasks", "set-baselines", ds, "--from", src)  # again: the same file
    with h5py.File(ds) as f:
        assert list(f["tasks/spec_yaml"].asstr()[:]) == specs


def test_set_baselines_errors_leave_the_dataset_as_it_was(dataset, tmp_path):
    shutil.copytree(dataset / "ds", tmp_path / "ds")
    ds = tmp_path / "ds" / "dataset.h5"
    before = ds.read_bytes()
    _, tasks = export(ds)
    a = tasks[0]
    row = {"kind": "row", "id": a["id"], "graph_hash": a["graph_hash"], "status": "ok", "eager_ms": 1.0}
    cases = [
        ([dict(row, id="nope")], "no task 'nope'"),
        ([dict(row, graph_hash="0" * 16)], "graph_hash"),
        ([dict(row, status="fine")], "status is ok or rejected:<reason>"),
        ([dict(row, eager_ms="fast")], "eager_ms must be a number"),
        ([dict(row, baselines={"eager_ms": 1.0, "gpu": "", "method": "m"})], "must not be empty"),
        ([dict(row, baselines={"eager_ms": -1.0, "gpu": "g", "method": "m"})], "must be > 0"),
        ([dict(row, status="rejected:x", baselines={"eager_ms": 1.0, "gpu": "g", "method": "m"})], "only into a task whose status is ok"),
        ([{"kind": "attrs", "attrs": {"format": "x"}}], "kforge's own"),
        ([{"kind": "what"}], "kind is row or attrs"),
    ]
    for k, (lines, needle) in enumerate(cases):
        src = results(tmp_path / f"bad{k}.jsonl", lines)
        error(kforge("tasks", "set-baselines", ds, "--from", src, check=False), "usage_error", f"bad{k}.jsonl:1", needle)
    (tmp_path / "torn.jsonl").write_text('{"kind": "row", "id"\n')
    error(kforge("tasks", "set-baselines", ds, "--from", tmp_path / "torn.jsonl", check=False), "usage_error", "not JSON")
    error(kforge("tasks", "set-baselines", ds, "--from", tmp_path / "none.jsonl", check=False), "io_error", "none.jsonl")
    error(kforge("tasks", "set-baselines", str(ds) + ".xz", "--from", tmp_path / "bad0.jsonl", check=False),
          "usage_error", "read-only")
    assert ds.read_bytes() == before


def outside_baselines(text):
    """The lines of a spec outside its top-level baselines block."""
    out, skip = [], False
    for ln in text.splitlines():
        if ln[:1] not in (" ", "\t", "#", "-", "") and ":" in ln:
            skip = ln.startswith("baselines:")
        if not skip:
            out.append(ln)
    return out


def test_task_file_keeps_every_other_line(tmp_path):
    task = tmp_path / "softmax_rows.yaml"
    task.write_text(open(os.path.join(SOURCE_DIR, "datasets", "samples", "softmax_rows.yaml")).read())
    original = task.read_text()
    src = tmp_path / "b.json"
    src.write_text(json.dumps({"eager_ms": 0.5, "gpu": "g", "torch": "t", "cuda": "c", "method": "m"}))
    assert "baselines written" in kforge("task", "set-baselines", task, "--from", src).stdout
    new = task.read_text()
    assert outside_baselines(new) == outside_baselines(original)  # comments and layout kept
    assert yaml.safe_load(new)["baselines"] == {"eager_ms": 0.5, "gpu": "g", "torch": "t", "cuda": "c", "method": "m"}
    assert new.count("baselines:") == 1
    assert "unchanged" in kforge("task", "set-baselines", task, "--from", src).stdout
    assert "eager_ms: 0.5" in kforge("task", "show", task).stdout
    src.write_text("[1]")
    error(kforge("task", "set-baselines", task, "--from", src, check=False), "usage_error", "baselines must be an object")
    assert task.read_text() == new
