"""`kforge tasks headroom` (issue 32, tasks that can pay): each row's compile_headroom is its
torch.compile time over its roofline on the H200, max(min_bytes / copy bandwidth, flops / the peak of
the task's precision contract), with the measured ceilings; checked against hand-computed rows (a
float32 task at 1e-4 and one at 1e-2, a bfloat16 GEMM bound by its FLOPs, a row of another GPU, one
without baselines); every other column is kept and summary_json gains `headroom` only. The
`--min-headroom` filter of `kforge tasks count|export`, a file written before the column, and the
server's `tasks.min_headroom` (what it serves and what `health` says it left out). No GPU needed."""
import json
import math
import os
import sys

import h5py
import pytest

from test_recost_cli import CAUSAL_FLOPS, SOURCE_DIR, columns, kforge, same, sdpa_task

# The H200's ceilings the command uses (tools/bench/results/2026-12-03_anticheat_audit_8a5564e_h200.json).
COPY_GBPS = 4280.721202511008
FP32, TF32, FP16 = 51.4205666569578, 419.4099266707841, 779.4858910846802
PEAK = {"float16": FP16, "float32": max(FP32, TF32 / 3, FP16 / 3), "integer": FP32}  # anticheat/README.md's table
BF16_FLOPS, BF16_BYTES = 1.47773718528e12, 5.851136e08  # rmsnorm_linear_bf16's cost


def roofline_ms(min_bytes, flops, precision):
    return max(min_bytes / (COPY_GBPS * 1e9), flops / (PEAK[precision] * 1e12)) * 1e3


# id -> (precision by hand, headroom to set, the baselines' GPU); None: no compile_ms.
ROWS = {
    "sdpa_true": ("float32", 2.0, "NVIDIA H200"),  # float32 at 1e-4: the split products' peak (259.8 TFLOP/s)
    "sdpa_loose": ("float16", 1.08, "NVIDIA H200"),  # float32 at 1e-2: one 16-bit pass fits, 779.5 TFLOP/s
    "rmsnorm_linear_bf16": ("float16", 1.2, "NVIDIA H200"),  # bfloat16 GEMM: its FLOPs bound it, not its bytes
    "softmax_rows": ("float32", 3.0, "NVIDIA H100"),  # another GPU's baselines: no ceilings here, unknown
    "attention_fp16": (None, None, None),  # no GPU stage yet: unknown
}


@pytest.fixture(scope="module")
def ds(tmp_path_factory):
    """The five tasks packed, then given baselines as the GPU stage would (status ok, compile_ms set
    to the headroom wanted times the roofline computed here, baseline_json naming the GPU), and
    without the compile_headroom column, as a file written before it."""
    d = tmp_path_factory.mktemp("headroom_cli")
    (d / "sdpa_true.yaml").write_text(sdpa_task("true", CAUSAL_FLOPS))
    (d / "sdpa_loose.yaml").write_text(
        sdpa_task("true", CAUSAL_FLOPS).replace("id: sdpa_true", "id: sdpa_loose").replace(
            "cost:", "tolerance: {atol: 0.01, rtol: 0.01}\ncost:"))
    samples = [os.path.join(SOURCE_DIR, "datasets", "samples", f"{n}.yaml")
               for n in ("rmsnorm_linear_bf16", "softmax_rows", "attention_fp16")]
    kforge("tasks", "pack", d / "in.h5", d / "sdpa_true.yaml", d / "sdpa_loose.yaml", *samples)
    with h5py.File(d / "in.h5", "r+") as f:
        t = f["tasks"]
        assert all(math.isnan(h) for h in t["compile_headroom"][:])  # pack writes the column, unknown
        del t["compile_headroom"]  # as in a dataset written before it (the shipped one)
        ids = list(t["id"].asstr()[:])
        assert ids == list(ROWS)
        for i, (precision, h, gpu) in enumerate(ROWS.values()):
            if h is None:
                continue
            t["status"][i] = "ok"
            t["compile_ms"][i] = h * roofline_ms(t["min_bytes"][i], t["flops"][i], precision)
            t["eager_ms"][i] = 2 * t["compile_ms"][i]
            t["baseline_json"][i] = json.dumps({"gpu": gpu, "torch": "2.11.0+cu130"})
    return d


@pytest.fixture(scope="module")
def out(ds):
    r = kforge("tasks", "headroom", ds / "in.h5", "--out", ds / "out.h5")
    return r, ds / "out.h5"


def test_the_headroom_is_compile_ms_over_the_roofline_and_nothing_else_changes(ds, out):
    r, path = out
    line = "every row: 5 rows, 3 with a headroom, 2 payable (>= 1.15); unknown: no compile_ms 1, no cost 0, other GPU 1"
    assert line in r.stdout, r.stdout
    before, attrs_before = columns(ds / "in.h5")
    after, attrs = columns(path)
    assert set(after) == set(before) | {"compile_headroom"}
    for c in before:
        assert len(after[c]) == 5 and all(same(x, y) for x, y in zip(before[c], after[c])), c
    got = dict(zip(after["id"], after["compile_headroom"]))
    for name, (_, h, gpu) in ROWS.items():
        if gpu == "NVIDIA H200":
            assert got[name] == pytest.approx(h, rel=1e-12), name
        else:
            assert math.isnan(got[name]), name
    # The bfloat16 GEMM is bound by its FLOPs at the 16-bit peak (1.90 ms), not its bytes (0.14 ms).
    bf16 = after["id"].index("rmsnorm_linear_bf16")
    assert after["compile_ms"][bf16] == pytest.approx(1.2 * BF16_FLOPS / (FP16 * 1e12) * 1e3)
    assert BF16_BYTES / (COPY_GBPS * 1e9) < BF16_FLOPS / (FP16 * 1e12)
    summary = json.loads(attrs["summary_json"])
    block = summary.pop("headroom")
    assert summary == json.loads(attrs_before["summary_json"])
    assert block["gpu"] == "NVIDIA H200" and block["ceilings"]["copy_gbps"] == COPY_GBPS
    assert block["ceilings"]["peak_tflops"] == pytest.approx(PEAK)
    served = block["served"]  # the two rows without a GPU stage's status are served too (cpu_ok)
    assert served["known"] == 3 and served["payable"] == 2 and served["at_least_1.05"] == 3
    assert served["by_precision"] == {"float16": 2, "float32": 1} and served["bound_by"] == {"bytes": 2, "flops": 1}
    assert served["histogram"]["1.05-1.15"] == 1 and served["histogram"]["1.15-1.25"] == 1
    # The fastest bytes-bound row read at the copy bandwidth over its headroom (1.08).
    assert served["compile_best_bytes_gbps"] == pytest.approx(COPY_GBPS / 1.08)
    assert served["histogram"]["2-5"] == 1 and served["histogram"]["unknown"] == 2


def test_min_headroom_filters_count_and_export(out, tmp_path):
    _, path = out
    count = lambda *a: int(kforge("tasks", "count", path, "--status", "all", *a).stdout)  # noqa: E731
    assert count() == 5 and count("--min-headroom", "1.1") == 2 and count("--min-headroom", "1.05") == 3
    assert count("--min-headroom", "2.5") == 0 and count("--min-headroom", "0") == 5
    kforge("tasks", "export", path, "--status", "all", "--min-headroom", "1.1", "--format", "jsonl", "--out", tmp_path / "t.jsonl")
    rows = [json.loads(ln) for ln in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert {r["id"] for r in rows} == {"sdpa_true", "rmsnorm_linear_bf16"}
    assert all(r["compile_headroom"] >= 1.1 for r in rows)
    r = kforge("tasks", "count", path, "--min-headroom", "-1", check=False)
    assert r.returncode == 2 and "--min-headroom must be >= 0" in r.stderr, r.stderr


def test_a_dataset_written_before_the_column_reads_as_unknown(ds, tmp_path):
    kforge("tasks", "export", ds / "in.h5", "--status", "all", "--format", "jsonl", "--out", tmp_path / "t.jsonl")
    rows = [json.loads(ln) for ln in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert len(rows) == 5 and all(r["compile_headroom"] is None for r in rows)
    assert kforge("tasks", "count", ds / "in.h5", "--min-headroom", "1").stdout.strip() == "0"


def test_set_baselines_forgets_the_headroom_of_the_old_compile_ms(out, tmp_path):
    _, path = out
    copy = tmp_path / "copy.h5"
    copy.write_bytes(path.read_bytes())
    (tmp_path / "rows.jsonl").write_text(json.dumps(
        {"kind": "row", "id": "sdpa_true", "status": "ok", "eager_ms": 1.0, "compile_ms": 0.5, "baseline": {"gpu": "NVIDIA H200"}}) + "\n")
    kforge("tasks", "set-baselines", copy, "--from", tmp_path / "rows.jsonl")
    got = columns(copy)[0]
    h = dict(zip(got["id"], got["compile_headroom"]))
    assert math.isnan(h["sdpa_true"]) and h["rmsnorm_linear_bf16"] == pytest.approx(1.2)


def test_the_server_serves_the_payable_split_and_says_what_it_left_out(out, tmp_path):
    sys.path.insert(0, os.path.join(SOURCE_DIR, "tests", "rollout"))
    from client_harness import Server
    from kforge_client import Client

    _, path = out
    s = Server(tmp_path, record=False, tasks={"samples": False, "datasets": [str(path)], "min_headroom": 1.1})
    try:
        assert "3 dataset rows with compile_headroom below 1.1 or unknown left out (tasks.min_headroom)" in s.line, s.line
        with Client(s.endpoint) as c:
            listed = c.tasks()["tasks"]
            assert {t["name"] for t in listed} == {"sdpa_true", "rmsnorm_linear_bf16"}
            assert all(t["compile_headroom"] >= 1.1 for t in listed)
            left = {(x["stage"], x["reason"]): x["rows"] for x in c.health()["left_out"]}
            assert left == {("headroom", "below"): 1, ("headroom", "unknown"): 2}
    finally:
        s.stop()


@pytest.mark.parametrize("args, needle", [
    (["--out", "OUT.h5.xz"], "uncompressed"),
    (["--out", "IN"], "must not be the dataset it reads"),
    (["--out", "OUT.h5", "--payable", "0.5"], "--payable must be >= 1"),
])
def test_bad_arguments_are_usage_errors(ds, tmp_path, args, needle):
    src = ds / "in.h5"
    args = [str(src) if a == "IN" else str(tmp_path / a) if a.startswith("OUT") else a for a in args]
    r = kforge("tasks", "headroom", src, *args, check=False)
    assert r.returncode == 2, (r.stdout, r.stderr)
    line = r.stderr.strip().splitlines()[-1]
    assert line.startswith("kforge: usage_error: ") and needle in line, line
