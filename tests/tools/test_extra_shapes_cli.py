"""`kforge tasks extra-shapes` (issue 30): a dataset written without extra shapes gets exactly the
`extra_dims` that `kforge synth` draws for the same tasks, and an empty batch ({B: 0}) where the
reference accepts one (the command runs it on the CPU; synth does not), every other column as it was, the counts
printed and recorded in summary_json; imported rows are left as they are; a shipped .h5.xz is read
as it is; bad arguments are one-line usage errors. No GPU needed."""
import json
import lzma
import os
import subprocess
import sys

import h5py
import pytest
import yaml

KFORGE = os.environ.get("KFORGE_BIN", "kforge")
SOURCE_DIR = os.environ.get("KFORGE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
FIXTURE = os.path.join(SOURCE_DIR, "tests", "data_synth", "make_imported_tasks.py")
N_TASKS = 6


def kforge(*args, check=True):
    r = subprocess.run([KFORGE, *map(str, args)], capture_output=True, text=True)
    if check and r.returncode != 0:
        raise AssertionError(f"kforge {args} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return r


def columns(path):
    with h5py.File(path) as f:
        t = f["tasks"]
        cols = {c: list(t[c].asstr()[:]) if t[c].dtype.kind == "O" else [float(x) for x in t[c][:]] for c in t}
        return cols, dict(f.attrs)


def without_empty(specs):
    """The spec texts with an empty-batch entry ({B: 0}, the last of extra_dims) taken out again, as
    the command writes the block (one flow map a line; the key gone when nothing is left)."""
    out = []
    for s in specs:
        lines = [ln for ln in s.split("\n") if ln != "  - {B: 0}"]
        if "extra_dims:" in lines and not lines[lines.index("extra_dims:") + 1].startswith("  - "):
            lines.remove("extra_dims:")
        out.append("\n".join(lines))
    return out


def same(a, b):
    return a == b or (a != a and b != b)  # NaN (the baselines before the GPU stage) equals NaN


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    """The same synthesis twice: without extra shapes (off/) and with them (on/)."""
    d = tmp_path_factory.mktemp("extra_shapes_cli")
    for name, enabled in (("off", "false"), ("on", "true")):
        (d / f"{name}.yaml").write_text(f"seed: 7\ntarget_tasks: {N_TASKS}\nshard_candidates: 12\n"
                                        f"extra_shapes: {{enabled: {enabled}}}\n")
        kforge("synth", "--config", d / f"{name}.yaml", "--out", d / name, "--quiet")
    return d


def test_adds_the_shapes_synth_draws_and_keeps_every_other_column(datasets, tmp_path):
    off, on = datasets / "off" / "dataset.h5", datasets / "on" / "dataset.h5"
    r = kforge("tasks", "extra-shapes", off, "--out", tmp_path / "out.h5", "--progress", 2)
    before, attrs_before = columns(off)
    want, _ = columns(on)
    got, attrs = columns(tmp_path / "out.h5")
    assert all("extra_dims" not in s for s in before["spec_yaml"])
    assert without_empty(got["spec_yaml"]) == want["spec_yaml"]  # the same block kforge synth writes, in the same place
    for s in got["spec_yaml"]:
        spec = yaml.safe_load(s)
        if {"B": 0} in spec["extra_dims"]:
            assert "B" in spec["dims"] and spec["extra_dims"][-1] == {"B": 0}, s[:400]
    for c in before:
        if c != "spec_yaml":
            assert all(same(x, y) for x, y in zip(before[c], got[c])) and len(before[c]) == len(got[c]), c
    counts = {}
    for s in got["spec_yaml"]:
        n = len(yaml.safe_load(s)["extra_dims"])
        counts[str(n)] = counts.get(str(n), 0) + 1
    summary = json.loads(attrs["summary_json"])
    assert summary["extra_shapes"] == {k: counts.get(k, 0) for k in ("0", "1", "2", "3", "4")}
    assert summary["extra_shapes_added"]["max_shapes"] == 4 and summary["extra_shapes_added"]["imported"] == 0
    assert {k: v for k, v in json.loads(attrs_before["summary_json"]).items() if k != "extra_shapes"} == \
        {k: v for k, v in summary.items() if k not in ("extra_shapes", "extra_shapes_added")}
    assert f"every graph task: {N_TASKS} tasks (" in r.stdout and "with any: " in r.stdout, r.stdout
    assert "imported: no dims: 0" in r.stdout, r.stdout
    assert f"extra-shapes: 2/{N_TASKS} rows" in r.stderr and f"extra-shapes: {N_TASKS}/{N_TASKS} rows" in r.stderr, r.stderr
    assert kforge("tasks", "count", tmp_path / "out.h5", "--status", "all").stdout.strip() == str(N_TASKS)
    # Run again: the block is replaced, not added twice; --max-shapes 1 keeps the first shape only.
    kforge("tasks", "extra-shapes", tmp_path / "out.h5", "--out", tmp_path / "again.h5")
    assert columns(tmp_path / "again.h5")[0]["spec_yaml"] == got["spec_yaml"]
    kforge("tasks", "extra-shapes", tmp_path / "out.h5", "--out", tmp_path / "one.h5", "--max-shapes", 1)
    for s, full in zip(columns(tmp_path / "one.h5")[0]["spec_yaml"], got["spec_yaml"]):
        assert yaml.safe_load(s)["extra_dims"] == yaml.safe_load(full)["extra_dims"][:1]


def test_reads_a_shipped_xz_dataset(datasets, tmp_path):
    xz = tmp_path / "dataset.h5.xz"
    xz.write_bytes(lzma.compress((datasets / "off" / "dataset.h5").read_bytes(), format=lzma.FORMAT_XZ))
    kforge("tasks", "extra-shapes", xz, "--out", tmp_path / "out.h5")
    assert without_empty(columns(tmp_path / "out.h5")[0]["spec_yaml"]) == columns(datasets / "on" / "dataset.h5")[0]["spec_yaml"]


def test_imported_rows_are_left_as_they_are(tmp_path):
    fixture = tmp_path / "fixture"
    subprocess.run([sys.executable, FIXTURE, "--out", str(fixture)], check=True, capture_output=True)
    imported = sorted(str(p) for p in (fixture / "tasks").glob("*.yaml"))
    assert imported, "the fixture wrote no imported task"
    samples = [os.path.join(SOURCE_DIR, "datasets", "samples", n + ".yaml") for n in ("linear_relu", "softmax_rows")]
    kforge("tasks", "pack", tmp_path / "mixed.h5", *samples, *imported)
    r = kforge("tasks", "extra-shapes", tmp_path / "mixed.h5", "--out", tmp_path / "out.h5")
    before, _ = columns(tmp_path / "mixed.h5")
    got, _ = columns(tmp_path / "out.h5")
    assert got["spec_yaml"][2:] == before["spec_yaml"][2:]
    for s in got["spec_yaml"][:2]:
        assert yaml.safe_load(s)["extra_dims"], s[:300]
    assert f"imported: no dims: {len(imported)}" in r.stdout and "every graph task: 2 tasks" in r.stdout, r.stdout


@pytest.mark.parametrize("args, needle", [
    (["--max-shapes", "6"], "--max-shapes is 1 to 5"),
    (["--max-shapes", "0"], "--max-shapes is 1 to 5"),
    (["--large-bytes", "-1"], "--large-bytes must be >= 0"),
    (["--out", "OUT.h5.xz"], "uncompressed"),
    (["--out", "IN"], "must not be the dataset it reads"),
])
def test_bad_arguments_are_usage_errors(datasets, tmp_path, args, needle):
    src = datasets / "off" / "dataset.h5"
    args = [str(src) if a == "IN" else str(tmp_path / a) if a.startswith("OUT") else a for a in args]
    if "--out" not in args:
        args += ["--out", str(tmp_path / "x.h5")]
    r = kforge("tasks", "extra-shapes", src, *args, check=False)
    assert r.returncode == 2, (r.stdout, r.stderr)
    line = r.stderr.strip().splitlines()[-1]
    assert line.startswith("kforge: usage_error: ") and needle in line, line


def test_a_missing_dataset_is_an_io_error(tmp_path):
    r = kforge("tasks", "extra-shapes", tmp_path / "none.h5", "--out", tmp_path / "x.h5", check=False)
    assert r.returncode == 1 and r.stderr.strip().splitlines()[-1].startswith("kforge: io_error: "), r.stderr


def test_a_large_shape_is_counted_with_its_footprint_growth(datasets, tmp_path):
    # --large-bytes adds the largest batch that fits; the summary gives how much larger than the task's
    # own footprint each large shape is (p10 <= p50 <= p90, every one above 1); none without it.
    r = kforge("tasks", "extra-shapes", datasets / "off" / "dataset.h5", "--out", tmp_path / "l.h5", "--max-shapes", 5,
               "--large-bytes", "1e11")
    added = json.loads(columns(tmp_path / "l.h5")[1]["summary_json"])["extra_shapes_added"]
    assert added["by_kind"].get("large", 0) >= 1, added
    g = added["large_footprint_growth"]
    assert 1 < g["p10"] <= g["p50"] <= g["p90"], g
    assert "large shapes' footprint over the task's own: p10 x" in r.stdout, r.stdout
    kforge("tasks", "extra-shapes", datasets / "off" / "dataset.h5", "--out", tmp_path / "n.h5")
    assert json.loads(columns(tmp_path / "n.h5")[1]["summary_json"])["extra_shapes_added"]["large_footprint_growth"] == {}
