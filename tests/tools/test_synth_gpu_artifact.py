"""The GPU stage's artifact check (tools/dataset/synth_gpu/artifact_check.py), in its CPU mode: an imported
task whose TorchScript artifact was not traced and checked at its own size (trace tiers A, B, A1, M) is
run against its module eagerly at that size on the same draws, and a row whose artifact differs is
rejected `artifact_mismatch`; a faithful artifact is kept, state arguments and train mode included.

The mismatching artifact is made the way tier M's failures happen: the module's trace freezes a size
(`float(x.shape[-1])`), traced at a smaller width than the task states, then packed as the task's
reference (kforge tasks pack checks the spec, not the values)."""
import hashlib
import json
import os
import sys

import pytest
import torch
import yaml
from synth_tool import FAST, SOURCE_DIR, kforge, records, tool

MODULES = os.path.join(SOURCE_DIR, "tests", "tools", "import_modules")
sys.path.insert(0, os.path.join(SOURCE_DIR, "tools", "dataset"))
from task_import import artifact  # noqa: E402

WIDTH_SOURCE = '''import torch
import torch.nn as nn


class Model(nn.Module):
    """Scales by the row width, read as a Python number (a trace freezes it)."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x * float(x.shape[-1]) + 1.0


def get_inputs():
    return [torch.randn(8, 48)]


def get_init_inputs():
    return []
'''
WIDTH, GOOD, TRAIN = "kb_l1_scale_by_width", "kb_l1_relu_op", "kb_l2_conv_bn_relu_train"


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    """An import of three modules; the width module's artifact replaced by one traced at width 16."""
    d = tmp_path_factory.mktemp("art")
    lvl = d / "src" / "level1"
    lvl.mkdir(parents=True)
    (lvl / "scale_by_width.py").write_text(WIDTH_SOURCE)
    out = d / "imp"
    kforge("tasks", "import", "--format", "kernelbench", str(lvl / "scale_by_width.py"),
           os.path.join(MODULES, "level1", "relu_op.py"), os.path.join(MODULES, "level2", "conv_bn_relu_train.py"),
           "--out", str(out), "--no-input-check")
    rows = [json.loads(line) for line in open(out / "imported.jsonl")]
    assert {r["id"] for r in rows} == {WIDTH, GOOD, TRAIN} and all(r["trace_tier"] == "module" for r in rows), rows
    spec_path = out / "tasks" / f"{WIDTH}.yaml"
    spec = yaml.safe_load(spec_path.read_text())
    ns = {}
    exec(WIDTH_SOURCE, ns)
    data, _ = artifact.trace(ns["Model"]().train(), 1, [], (torch.randn(8, 16),))
    sha, b64 = artifact.encode(data)
    assert b64 != spec["reference"]["artifact"]
    text = spec_path.read_text()
    text = text.replace(spec["reference"]["artifact"], b64).replace(spec["reference"]["sha256"], sha)
    assert hashlib.sha256(data).hexdigest() in text
    bad = d / "tampered"
    bad.mkdir()
    (bad / f"{WIDTH}.yaml").write_text(text)
    ds_dir = d / "ds"
    ds_dir.mkdir()
    kforge("tasks", "pack", str(ds_dir / "dataset.h5"), str(bad / f"{WIDTH}.yaml"), str(out / "tasks" / f"{GOOD}.yaml"),
           str(out / "tasks" / f"{TRAIN}.yaml"))
    return ds_dir, rows


def write_tiers(ds_dir, rows, tiers):
    path = ds_dir / "imported.jsonl"
    with open(path, "w") as f:
        for r in rows:
            f.write(json.dumps(dict(r, trace_tier=tiers[r["id"]])) + "\n")
    return path


def run(ds_dir, out, *extra, ids=None, env=None):
    if ids:  # only these tasks (fewer CPU compiles)
        (out.parent / f"{out.name}.ids").write_text("\n".join(ids) + "\n")
        extra = (*extra, "--ids", out.parent / f"{out.name}.ids")
    # torch.compile off (it is eager then): these tests are of the artifact check, and CPU compiles of
    # each task were most of their time in CI (the stage's compile path has tests of its own).
    env = dict(env or os.environ, TORCH_COMPILE_DISABLE="1")
    r = tool(ds_dir / "dataset.h5", "--device", "cpu", "--workers", "0", "--out", out, *FAST, *extra, env=env)
    return {x["id"]: x for x in records(out)}, r


def test_a_tier_m_artifact_that_froze_a_size_is_rejected_and_a_faithful_one_kept(imported, tmp_path):
    ds_dir, rows = imported
    write_tiers(ds_dir, rows, {WIDTH: "M", GOOD: "M", TRAIN: "B"})
    recs, r = run(ds_dir, tmp_path / "gpu")
    assert set(recs) == {WIDTH, GOOD, TRAIN}, r.stderr
    assert "artifact check (auto) on 3 of 3 imported task(s)" in r.stderr, r.stderr
    bad = recs[WIDTH]
    assert bad["status"] == "rejected:artifact_mismatch" and bad["reason"] == "artifact_mismatch", bad
    art = bad["checks"]["artifact"]
    assert art["checked"] and art["tier"] == "M", art
    # x * 48 + 1 against x * 16 + 1: nearly every element is outside 1e-4
    assert art["outputs"][0]["failing_fraction"] > 0.9 and art["outputs"][0]["max_abs_diff"] > 1.0, art
    for tid, tier in ((GOOD, "M"), (TRAIN, "B")):
        ok = recs[tid]
        assert ok["status"] == "ok", ok
        a = ok["checks"]["artifact"]
        assert a["checked"] and a["tier"] == tier and a["outputs"][0]["failing_fraction"] == 0.0, a
        assert a["outputs"][0]["same_nonfinite"], a
    # train-mode BatchNorm: its state (weights, running statistics) reaches the artifact as arguments
    assert recs[TRAIN]["flags"]["module_mode"] == "train"


def test_auto_trusts_an_artifact_checked_at_its_own_size_and_all_checks_it_anyway(imported, tmp_path):
    ds_dir, rows = imported
    write_tiers(ds_dir, rows, {WIDTH: "module", GOOD: "module", TRAIN: "module"})
    recs, r = run(ds_dir, tmp_path / "auto", ids=[WIDTH, GOOD])
    assert "artifact check (auto) on 0 of 2" in r.stderr, r.stderr
    assert recs[WIDTH]["status"] == "ok" and recs[WIDTH]["checks"]["artifact"] == {"tier": "module", "checked": False}
    recs, _ = run(ds_dir, tmp_path / "all", "--artifact-check", "all", ids=[WIDTH, GOOD])
    assert recs[WIDTH]["status"] == "rejected:artifact_mismatch" and recs[GOOD]["status"] == "ok", recs
    recs, _ = run(ds_dir, tmp_path / "off", "--artifact-check", "off", ids=[WIDTH])
    assert recs[WIDTH]["status"] == "ok" and not recs[WIDTH]["checks"]["artifact"]["checked"]


def test_without_tiers_every_imported_artifact_is_checked(imported, tmp_path):
    ds_dir, rows = imported
    path = write_tiers(ds_dir, rows, {WIDTH: "M", GOOD: "M", TRAIN: "M"})
    os.remove(path)
    recs, r = run(ds_dir, tmp_path / "none", ids=[WIDTH])
    assert "on 1 of 1 imported task(s); trace tiers from nowhere" in r.stderr, r.stderr
    assert recs[WIDTH]["status"] == "rejected:artifact_mismatch" and recs[WIDTH]["checks"]["artifact"]["tier"] == "unknown"
    r = tool(ds_dir / "dataset.h5", "--device", "cpu", "--imported", tmp_path / "missing.jsonl", check=False)
    assert r.returncode == 1 and "--imported" in r.stderr and "no such file" in r.stderr, r.stderr


def test_a_host_without_kforge_runs_from_what_kforge_exported_beforehand(imported, tmp_path):
    ds_dir, rows = imported
    write_tiers(ds_dir, rows, {WIDTH: "A", GOOD: "A", TRAIN: "A"})
    exported, specs = tmp_path / "export-gpu.jsonl", tmp_path / "specs"
    kforge("tasks", "export-gpu", str(ds_dir / "dataset.h5"), "--shard", "all/1", "--out", str(exported))
    kforge("tasks", "export", str(ds_dir / "dataset.h5"), "--status", "all", "--format", "kernelbench", "--specs",
           "--out", str(specs))
    env = dict(os.environ, KFORGE_BIN=str(tmp_path / "no-kforge"))  # any call of kforge would fail the run
    recs, r = run(ds_dir, tmp_path / "gpu", "--exported", exported, "--specs", specs, ids=[WIDTH, GOOD], env=env)
    assert recs[WIDTH]["status"] == "rejected:artifact_mismatch" and recs[GOOD]["status"] == "ok", r.stderr
    assert recs[WIDTH]["shard"] == "0/1" and recs[WIDTH]["graph_hash"], recs[WIDTH]
    r = tool(ds_dir / "dataset.h5", "--device", "cpu", "--exported", exported, "--shard", "0/2", check=False, env=env)
    assert r.returncode == 1 and "--exported takes --ids FILE or --shard 0/1" in r.stderr, r.stderr


def test_compare_counts_nonfinite_and_tolerance(tmp_path):
    sys.path.insert(0, os.path.join(SOURCE_DIR, "tools", "dataset"))
    from synth_gpu import artifact_check
    e = torch.tensor([1.0, float("nan"), float("inf"), 2.0])
    assert artifact_check.compare(torch, [e], [e.clone()], 1e-4, 1e-4)[0] == ""
    a = e.clone()
    a[1] = 0.0  # a NaN of the module that the artifact does not reproduce
    reason, d = artifact_check.compare(torch, [e], [a], 1e-4, 1e-4)
    assert reason == "artifact_mismatch" and not d[0]["same_nonfinite"], d
    a = e.clone()
    a[3] = 2.0 + 5e-4  # beyond 1e-4 + 1e-4 * 2
    reason, d = artifact_check.compare(torch, [e], [a], 1e-4, 1e-4)
    assert reason == "artifact_mismatch" and d[0]["failing_fraction"] == 0.25, d
    a[3] = 2.0 + 2e-4  # within it
    assert artifact_check.compare(torch, [e], [a], 1e-4, 1e-4)[0] == ""
    reason, d = artifact_check.compare(torch, [e], [e[:2]], 1e-4, 1e-4)
    assert reason == "artifact_mismatch" and d[0]["artifact"] == [[2], "float32"], d
    g = torch.Generator().manual_seed(0)
    s = artifact_check.sample(torch, {"dist": "normal", "mean": 0.0, "std": 1.0}, [10000], torch.float32, g, "cpu")
    assert s.abs().max() <= 3.4642 and abs(float(s.mean())) < 0.05
    s = artifact_check.sample(torch, {"dist": "randint", "low": -1, "high": 2}, [1000], torch.int64, g, "cpu")
    assert set(s.tolist()) == {-1, 0, 1}


def test_compare_and_the_noise_share_hold_across_chunks(monkeypatch):
    """KernelBench's level 1 tensors (1.6 G elements) are compared chunk by chunk: the verdicts and
    figures are those of the whole tensor wherever the non-finite values, the mismatch and the
    largest difference fall (chunks of 3 here)."""
    from synth_gpu import artifact_check, checks
    monkeypatch.setattr(artifact_check, "CHUNK", 3)
    monkeypatch.setattr(checks, "CHUNK", 3)
    e = torch.arange(1.0, 11.0)
    e[4] = float("nan")
    e[7] = float("-inf")
    a = e.clone()
    a[9] += 3e-3  # the largest difference, in the last chunk, beyond 1e-4 + 1e-4 * 10
    reason, d = artifact_check.compare(torch, [e], [a], 1e-4, 1e-4)
    assert reason == "artifact_mismatch" and d[0]["same_nonfinite"] and d[0]["failing_fraction"] == 0.1, d
    assert abs(d[0]["max_abs_diff"] - 3e-3) < 1e-5, d
    a = e.clone()
    a[7] = float("inf")  # the other infinity, in the middle chunk
    reason, d = artifact_check.compare(torch, [e], [a], 1e-4, 1e-4)
    assert reason == "artifact_mismatch" and not d[0]["same_nonfinite"], d
    # The noise of two runs on the same inputs, as a share of the tolerance.
    b = e.clone()
    b[2] += 1e-5  # a tenth of atol + rtol * 3 is 4e-5: within it
    assert checks.noise_share(torch, e, b, 1e-4, 1e-4) == pytest.approx(1e-5 / (1e-4 + 3e-4), rel=5e-2)
    b[9] += 1e-4  # 0.09 of the tolerance at 10
    assert checks.noise_share(torch, e, b, 1e-4, 1e-4) == pytest.approx(1e-4 / 1.1e-3, rel=2e-2)
    b[4] = 0.0  # a NaN that the second run did not reproduce
    assert checks.noise_share(torch, e, b, 1e-4, 1e-4) == float("inf")


def test_rows_rejected_before_a_check_changed_are_staged_again_once():
    """kernelbench_gpu.sh's KB_RESTAGE: the rows an older check rejected for the named reasons are
    staged again; their new records (written after the date) are not, whatever they say."""
    from synth_gpu.records import restage_rule
    old = {"id": "a", "status": "rejected:eager_failed", "date": "2026-12-07T13:09:24Z"}
    new = dict(old, date="2026-12-07T14:00:00Z")
    other = dict(old, status="rejected:invariant_to_inputs_gpu")
    ok = dict(old, status="ok")
    rule = restage_rule("eager_failed, nondeterministic_gpu@2026-12-07T13:30:00Z")
    assert rule(old) and not rule(new) and not rule(other) and not rule(ok)
    assert rule(dict(old, status="rejected:nondeterministic_gpu"))
    assert restage_rule("eager_failed")(new), "without a date every such row is staged again"
    assert not restage_rule("")(old) and not restage_rule(None)(old)


def test_an_older_artifact_with_tf32_convolutions_is_checked_in_float32():
    """An artifact traced with cudnn.allow_tf32 on (the importer before cf02da8) holds allow_tf32 = True in
    its convolutions, nested modules included: the check clears it on load, as kforge's loader does, and
    the module still computes the same."""
    import io

    from synth_gpu import artifact_check
    nn = torch.nn

    class Convs(nn.Module):
        def __init__(self):
            super().__init__()
            self.c = nn.Conv2d(3, 4, 3)
            self.inner = nn.Sequential(nn.Conv1d(2, 2, 3))

        def forward(self, x, y):
            return self.c(x), self.inner(y)

    x, y = torch.randn(1, 3, 8, 8), torch.randn(1, 2, 8)
    saved = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = True  # as an older import traced
    try:
        traced = torch.jit.trace(Convs(), (x, y))
    finally:
        torch.backends.cudnn.allow_tf32 = saved
    buf = io.BytesIO()
    torch.jit.save(traced, buf)
    loaded = torch.jit.load(io.BytesIO(buf.getvalue()))
    assert artifact.tf32_convolutions(loaded) == 2
    want = [t.clone() for t in loaded(x, y)]
    assert artifact_check.float32_convolutions(loaded) == 2
    assert artifact_check.float32_convolutions(loaded) == 0  # none left in the graphs that run
    assert all(torch.equal(a, b) for a, b in zip(loaded(x, y), want))
