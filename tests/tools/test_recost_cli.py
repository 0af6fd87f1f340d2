"""`kforge tasks recost` (issue 32): a dataset whose stored costs predate a change to an operator's
count (causal sdpa counted every (query, key) pair) gets each graph row's cost re-derived from its
graph, in the spec's `cost:` line and the flops and min_bytes columns; every other row, line, column
and summary key is kept; a shipped .h5.xz is read as it is; bad arguments are one-line usage errors.
No GPU needed."""
import json
import lzma
import os
import subprocess

import h5py
import pytest
import yaml

KFORGE = os.environ.get("KFORGE_BIN", "kforge")
SOURCE_DIR = os.environ.get("KFORGE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))

# B=2, H=3, Lq=7, Lk=9, D=8: 2 * B * H * (Dq + Dv) = 192 flops per (query, key) pair; causal: query i
# sees min(i + 1, 9) keys, 1 + ... + 7 = 28 pairs of 63.
CAUSAL_FLOPS, FULL_FLOPS = 192 * 28, 192 * 63
MIN_BYTES = 4 * (2 * 3 * 7 * 8 + 2 * 2 * 3 * 9 * 8 + 2 * 3 * 7 * 8)


def kforge(*args, check=True):
    r = subprocess.run([KFORGE, *map(str, args)], capture_output=True, text=True)
    if check and r.returncode != 0:
        raise AssertionError(f"kforge {args} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return r


def sdpa_task(causal, flops):
    return f"""kforge_task: 1
id: sdpa_{causal}
source: samples
split: train
description: attention, is_causal {causal}
seed: 5
dtype: float32
dims: {{B: 2, H: 3, L: 7, S: 9, D: 8}}
graph:
  inputs:
    - {{name: q, shape: [B, H, L, D]}}
    - {{name: k, shape: [B, H, S, D]}}
    - {{name: v, shape: [B, H, S, D]}}
  nodes:
    - {{id: y, op: sdpa, in: [q, k, v], attrs: {{is_causal: {causal}}}}}
  outputs: [y]
cost: {{flops: {flops}, min_bytes: {MIN_BYTES}}}
provenance: {{generator: test, seed: 0}}
"""


def columns(path):
    with h5py.File(path) as f:
        t = f["tasks"]
        cols = {c: list(t[c].asstr()[:]) if t[c].dtype.kind == "O" else [float(x) for x in t[c][:]] for c in t}
        return cols, dict(f.attrs)


def same(a, b):
    return a == b or (a != a and b != b)  # NaN (the baselines before the GPU stage) equals NaN


@pytest.fixture(scope="module")
def stale(tmp_path_factory):
    """Causal and plain sdpa and a sample packed now (fresh.h5), then the causal row's cost put back
    to the full-attention count, as a dataset written before issue 32 stored it (stale.h5)."""
    d = tmp_path_factory.mktemp("recost_cli")
    for causal, flops in (("true", CAUSAL_FLOPS), ("false", FULL_FLOPS)):
        (d / f"sdpa_{causal}.yaml").write_text(sdpa_task(causal, flops))
    sample = os.path.join(SOURCE_DIR, "datasets", "samples", "softmax_rows.yaml")
    kforge("tasks", "pack", d / "fresh.h5", d / "sdpa_true.yaml", d / "sdpa_false.yaml", sample)
    (d / "stale.h5").write_bytes((d / "fresh.h5").read_bytes())
    with h5py.File(d / "stale.h5", "r+") as f:
        t = f["tasks"]
        spec = t["spec_yaml"].asstr()[0]
        assert f"cost: {{flops: {CAUSAL_FLOPS}," in spec
        t["spec_yaml"][0] = spec.replace(f"flops: {CAUSAL_FLOPS},", f"flops: {FULL_FLOPS},")
        t["flops"][0] = FULL_FLOPS
    return d


def test_the_stale_row_gets_the_graphs_cost_and_nothing_else_changes(stale, tmp_path):
    # The stale spec no longer loads: its stated cost disagrees with the graph.
    (tmp_path / "stale.yaml").write_text(columns(stale / "stale.h5")[0]["spec_yaml"][0])
    r = kforge("task", "fmt", tmp_path / "stale.yaml", check=False)
    assert r.returncode != 0 and "but the graph gives" in r.stderr, r.stderr
    r = kforge("tasks", "recost", stale / "stale.h5", "--out", tmp_path / "out.h5")
    assert f"sdpa_true: flops {FULL_FLOPS} -> {CAUSAL_FLOPS}, min_bytes {MIN_BYTES} -> {MIN_BYTES}" in r.stdout, r.stdout
    assert "changed: 1 of 3 graph tasks (1 not rejected)" in r.stdout and "imported: left as they are: 0" in r.stdout, r.stdout
    fresh, attrs_fresh = columns(stale / "fresh.h5")
    got, attrs = columns(tmp_path / "out.h5")
    for c in fresh:  # what pack writes today, in every column
        assert len(got[c]) == 3 and all(same(x, y) for x, y in zip(fresh[c], got[c])), c
    assert got["flops"][:2] == [CAUSAL_FLOPS, FULL_FLOPS]
    assert yaml.safe_load(got["spec_yaml"][0])["cost"] == {"flops": CAUSAL_FLOPS, "min_bytes": MIN_BYTES}
    summary = json.loads(attrs["summary_json"])
    assert summary.pop("recost") == {"tool": "kforge tasks recost", "graph_tasks": 3, "changed": 1, "changed_served": 1}
    assert summary == json.loads(attrs_fresh["summary_json"])
    assert kforge("tasks", "count", tmp_path / "out.h5", "--status", "all").stdout.strip() == "3"
    (tmp_path / "recosted.yaml").write_text(got["spec_yaml"][0])
    kforge("task", "fmt", tmp_path / "recosted.yaml")  # loads again
    # Run again: nothing changes, and the summary keeps the first run's record.
    r = kforge("tasks", "recost", tmp_path / "out.h5", "--out", tmp_path / "again.h5")
    assert "changed: 0 of 3 graph tasks" in r.stdout and "sdpa_true:" not in r.stdout, r.stdout
    again, attrs_again = columns(tmp_path / "again.h5")
    assert again["spec_yaml"] == got["spec_yaml"] and attrs_again["summary_json"] == attrs["summary_json"]


def test_a_spec_without_a_cost_line_keeps_its_text(tmp_path):
    cost_line = f"cost: {{flops: {CAUSAL_FLOPS}, min_bytes: {MIN_BYTES}}}\n"
    (tmp_path / "t.yaml").write_text(sdpa_task("true", CAUSAL_FLOPS).replace(cost_line, ""))
    kforge("tasks", "pack", tmp_path / "p.h5", tmp_path / "t.yaml")
    with h5py.File(tmp_path / "p.h5", "r+") as f:
        f["tasks"]["flops"][0] = FULL_FLOPS
    r = kforge("tasks", "recost", tmp_path / "p.h5", "--out", tmp_path / "out.h5")
    assert "changed: 1 of 1 graph tasks" in r.stdout, r.stdout
    before, _ = columns(tmp_path / "p.h5")
    got, _ = columns(tmp_path / "out.h5")
    assert got["spec_yaml"] == before["spec_yaml"] and got["flops"] == [CAUSAL_FLOPS]


def test_reads_a_shipped_xz_dataset(stale, tmp_path):
    xz = tmp_path / "dataset.h5.xz"
    xz.write_bytes(lzma.compress((stale / "stale.h5").read_bytes(), format=lzma.FORMAT_XZ))
    kforge("tasks", "recost", xz, "--out", tmp_path / "out.h5")
    assert columns(tmp_path / "out.h5")[0]["spec_yaml"] == columns(stale / "fresh.h5")[0]["spec_yaml"]


@pytest.mark.parametrize("args, needle", [
    (["--out", "OUT.h5.xz"], "uncompressed"),
    (["--out", "IN"], "must not be the dataset it reads"),
])
def test_bad_arguments_are_usage_errors(stale, tmp_path, args, needle):
    src = stale / "stale.h5"
    args = [str(src) if a == "IN" else str(tmp_path / a) if a.startswith("OUT") else a for a in args]
    r = kforge("tasks", "recost", src, *args, check=False)
    assert r.returncode == 2, (r.stdout, r.stderr)
    line = r.stderr.strip().splitlines()[-1]
    assert line.startswith("kforge: usage_error: ") and needle in line, line


def test_a_missing_dataset_is_an_io_error(tmp_path):
    r = kforge("tasks", "recost", tmp_path / "none.h5", "--out", tmp_path / "x.h5", check=False)
    assert r.returncode == 1 and r.stderr.strip().splitlines()[-1].startswith("kforge: io_error: "), r.stderr
