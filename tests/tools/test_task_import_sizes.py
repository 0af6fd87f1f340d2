"""tools/dataset/task_import at a module's own size without its compute (issue 29): the modules of
tests/tools/import_modules/sizes/ (written for this suite) are imported under a worker address
space far below their arguments, so a module imported there was never allocated at its size; the
task states that size (shapes, flops, bytes) while the artifact, traced at a small size, computes
the module's function at other sizes; a trace that froze a size is traced again at the module's own
size on the meta device (tier M), and one that reads a tensor whose values the meta device lacks is
refused; get_inputs()'s Python scalars reach the reference; level 4 is skipped; --gpu-memory-gib sets
--max-bytes."""
import base64
import io
import json
import math
import os
import subprocess
import sys
import types

import pytest
import torch
import yaml

SOURCE_DIR = os.environ.get("KFORGE_SOURCE_DIR", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
PYTHON = os.environ.get("KFORGE_PYTHON_BIN") or sys.executable
SIZES = os.path.join("tests", "tools", "import_modules", "sizes")
META = os.path.join("tests", "tools", "import_modules", "meta_trace")


def run_import(*args, out):
    env = dict(os.environ, PYTHONPATH=os.path.join(SOURCE_DIR, "tools", "dataset"))
    p = subprocess.run([PYTHON, "-m", "task_import", "--format", "kernelbench", "--out", str(out), *args],
                       cwd=SOURCE_DIR, env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    tasks = {f[:-5]: yaml.safe_load(open(out / "tasks" / f)) for f in os.listdir(out / "tasks")}
    done = [json.loads(line) for line in open(out / "imported.jsonl")]
    notes, tiers = {d["id"]: d["notes"] for d in done}, {d["id"]: d["trace_tier"] for d in done}
    skipped = {os.path.basename(s["file"]): s for s in map(json.loads, open(out / "skipped.jsonl"))}
    return types.SimpleNamespace(tasks=tasks, notes=notes, tiers=tiers, skipped=skipped, stderr=p.stderr, out=str(out))


@pytest.fixture(scope="module")
def sizes(tmp_path_factory):
    # 4 GiB of address space: torch takes about 3 of it, matmul_large's arguments would take 8
    return run_import("--memory-mb", "4096", "--jobs", "2", "--level", "1", SIZES, out=tmp_path_factory.mktemp("sizes"))


def artifact(t):
    return torch.jit.load(io.BytesIO(base64.b64decode(t["reference"]["artifact"])))


def test_every_module_is_imported_or_skipped_for_its_reason(sizes):
    assert set(sizes.tasks) == {"kb_l1_scalar_argument", "kb_l1_matmul_large", "kb_l1_wide_mlp", "kb_l1_frozen_size",
                                "kb_l1_batched_softmax"}, \
        sizes.stderr
    assert {k: s["reason"] for k, s in sizes.skipped.items()} == {"hub_model.py": "needs_network"}
    assert sizes.tiers == {"kb_l1_scalar_argument": "module", "kb_l1_matmul_large": "A", "kb_l1_wide_mlp": "B",
                           "kb_l1_frozen_size": "M", "kb_l1_batched_softmax": "A"}


def test_a_trace_verified_at_two_sizes_gets_other_shapes_each_checked_against_eager(sizes):
    """Issue 30: tier A's other shapes, an odd one and a batch of one, with the inputs' and outputs'
    shapes there; a module traced at its own size, at a tier B size or on the meta device gets none.
    kforge's parser reads them, and the artifact computes the module's function at each."""
    t = sizes.tasks["kb_l1_batched_softmax"]
    shapes = {x["kind"]: x for x in t["extra_shapes"]}
    assert set(shapes) == {"odd", "batch_one"}, t["extra_shapes"]
    odd, one = shapes["odd"], shapes["batch_one"]
    b, d = odd["constants"]["batch_size"], odd["constants"]["dim"]
    assert b % 2 == 1 and d % 2 == 1 and odd["inputs"] == [[b, d]] and odd["outputs"] == [[b, d]]
    assert one["constants"]["batch_size"] == 1 and one["inputs"] == [[1, one["constants"]["dim"]]]
    assert one["outputs"] == one["inputs"]
    assert any(n.startswith("other shapes (extra_shapes, checked against eager): odd at batch_size=") for n in sizes.notes[t["id"]])
    for x in (odd, one):
        a = torch.rand(*x["inputs"][0])
        (got,) = artifact(t)(a)
        torch.testing.assert_close(got, torch.softmax(a, dim=1) * 2.0)
    assert [x["kind"] for x in sizes.tasks["kb_l1_matmul_large"]["extra_shapes"]] == ["odd"]  # N alone: no batch constant
    for tid in ("kb_l1_scalar_argument", "kb_l1_wide_mlp", "kb_l1_frozen_size"):
        assert "extra_shapes" not in sizes.tasks[tid], tid
    kforge = os.environ.get("KFORGE_BIN")
    if kforge:  # the C++ parser reads the file and keeps both shapes
        p = subprocess.run([kforge, "task", "show", os.path.join(sizes.out, "tasks", "kb_l1_batched_softmax.yaml")],
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        assert "extra_shapes" in p.stdout and "batch_one" in p.stdout, p.stdout[-2000:]


def test_a_large_module_states_its_own_size_without_allocating_it(sizes):
    t, n = sizes.tasks["kb_l1_matmul_large"], 32768
    assert [a["shape"] for a in t["arguments"]] == [[n, n], [n, n]]
    assert t["outputs"] == [{"name": "y0", "shape": [n, n], "dtype": "float32"}]
    assert t["cost"] == {"flops": 2 * n ** 3 + n * n, "min_bytes": 3 * n * n * 4}  # matmul, then relu
    assert all(a["draw"] == {"dist": "uniform", "low": 0.0, "high": 1.0} for a in t["arguments"])
    assert any("tier A: N=" in note for note in sizes.notes[t["id"]])
    a, b = torch.rand(24, 24), torch.rand(24, 24)  # a size the importer never traced at
    (got,) = artifact(t)(a, b)
    torch.testing.assert_close(got, torch.relu(a @ b))


def test_widths_shrink_with_the_batch_and_the_draws_follow_the_real_fan_in(sizes):
    t = sizes.tasks["kb_l1_wide_mlp"]
    shapes = {a["name"]: a["shape"] for a in t["arguments"]}
    assert shapes == {"x0": [4096, 16384], "fc1.weight": [16384, 16384], "fc1.bias": [16384],
                      "fc2.weight": [1024, 16384], "fc2.bias": [1024]}
    bound = 1 / math.sqrt(16384)
    for name in ("fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"):
        draw = next(a["draw"] for a in t["arguments"] if a["name"] == name)
        assert draw == {"dist": "uniform", "low": -bound, "high": bound}, name
    assert t["outputs"][0]["shape"] == [4096, 1024]
    assert t["cost"]["flops"] == 2 * 4096 * 16384 * (16384 + 1024) + 4096 * 16384  # the two products, then relu
    assert any("tier B" in note for note in sizes.notes[t["id"]])
    torch.manual_seed(0)
    x, w1, b1, w2, b2 = torch.randn(5, 40), torch.randn(24, 40), torch.randn(24), torch.randn(7, 24), torch.randn(7)
    (got,) = artifact(t)(x, w1, b1, w2, b2)
    torch.testing.assert_close(got, torch.relu(x @ w1.T + b1) @ w2.T + b2)


def test_a_trace_that_froze_a_size_is_traced_again_at_the_modules_own_size(sizes):
    """The trace at a small size keeps 1 / float(dim) and is refuted at the second size; the one on the
    meta device at the module's own size keeps the real dim, which is the only size the task states."""
    t = sizes.tasks["kb_l1_frozen_size"]
    note = next(n for n in sizes.notes[t["id"]] if "tier M" in n)
    assert "was refuted (at a second size" in note and "the GPU stage must validate" in note
    assert [a["shape"] for a in t["arguments"]] == [[64, 1 << 24]] and t["outputs"][0]["shape"] == [64]
    ref = artifact(t)
    (got,) = ref(torch.empty(64, 1 << 24, device="meta"))
    assert got.shape == (64,)
    assert [float(c.output().toIValue()) for c in constants(ref)] == [float(1 << 24)]  # the divisor kept


@pytest.fixture(scope="module")
def meta(tmp_path_factory):
    return run_import("--memory-mb", "4096", "--jobs", "2", "--level", "3", META, out=tmp_path_factory.mktemp("meta"))


def test_modules_whose_trace_holds_at_its_own_size_only_are_traced_on_the_meta_device(meta):
    """Each module of meta_trace/ names in its first line `# expect: M` (imported through tier M) or
    the reason it is skipped for."""
    for f in sorted(os.listdir(os.path.join(SOURCE_DIR, META))):
        want = open(os.path.join(SOURCE_DIR, META, f)).readline().split("# expect:")[1].strip()
        tid = "kb_l3_" + f[:-3]
        if want == "M":
            assert meta.tiers.get(tid) == "M", (f, meta.skipped.get(f), meta.stderr)
            assert any("traced on the meta device at the module's own size (tier M)" in n for n in meta.notes[tid])
        else:
            assert meta.skipped[f]["reason"] == want, (f, meta.skipped.get(f), meta.stderr)


def constants(module):
    return [n for n in module.graph.findAllNodes("prim::Constant") if n.output().type().kind() == "TensorType"]


def test_a_plain_tensor_of_the_batchs_size_that_forward_overwrites_becomes_zeros(meta):
    t = meta.tasks["kb_l3_batch_state"]
    b, f = 65536, 128
    assert [a["shape"] for a in t["arguments"]] == [[b, f], [b, f], [f, 2 * f], [f]]
    assert t["outputs"][0]["shape"] == [b, f] and t["cost"]["flops"] >= 2 * b * 2 * f * f
    assert any("1 tensor constant(s)" in n and "zeros" in n for n in meta.notes[t["id"]])
    ref = artifact(t)
    assert constants(ref) == [] and "torch.zeros([65536, 128]" in ref.code
    torch.manual_seed(1)  # the artifact at the module's own size (never run by the importer) against the module's function
    x, h0, w, bias = torch.randn(b, f), torch.randn(b, f), torch.randn(f, 2 * f) / 16, torch.randn(f)
    (got,) = ref(x, h0, w, bias)
    torch.testing.assert_close(got, torch.tanh(torch.cat([x, h0], dim=1) @ w.T + bias))


def test_sizes_a_trace_computes_hold_at_the_modules_own_size(meta):
    t = meta.tasks["kb_l3_chunked_scan"]
    b, n, d, c = 256, 2048, 64, 8
    assert [a["shape"] for a in t["arguments"]] == [[b, n, d], [b, n, d]] and t["outputs"][0]["shape"] == [b, n, d]
    note = next(x for x in meta.notes[t["id"]] if "tier M" in x)
    assert "tier B: batch_size=" in note and "matched eager there" in note
    torch.manual_seed(2)
    x, gate = torch.randn(b, n, d), torch.randn(b, n, d)
    (got,) = artifact(t)(x, gate)
    y = (x * torch.sigmoid(gate)).reshape(b, n // c, c, d).cumsum(2)
    torch.testing.assert_close(got, (y + y[:, :, -1:].cumsum(1) - y[:, :, -1:]).reshape(b, n, d))


def test_a_plain_tensor_forward_reads_is_still_refused(meta):
    detail = meta.skipped["read_attribute.py"]["detail"]
    assert "at a second size" in detail and "tier M (traced on the meta device at the module's size)" in detail
    assert "plain attribute" in detail and "the meta device holds no values for it" in detail


def test_scalar_arguments_reach_the_reference(sizes):
    t = sizes.tasks["kb_l1_scalar_argument"]
    assert [a["name"] for a in t["arguments"]] == ["x0"] and t["arguments"][0]["shape"] == [4, 8]
    assert any("x1 = 3, x2 = 0.5, x3 = True" in note for note in sizes.notes[t["id"]])
    x = torch.randn(4, 8)
    (got,) = artifact(t)(x)
    torch.testing.assert_close(got, -(x * 3 + 0.5))


def test_level4_is_skipped_for_the_network_it_needs(sizes):
    detail = sizes.skipped["hub_model.py"]["detail"]
    assert "level 4" in detail and "from_pretrained" in detail


def test_the_gpu_memory_sets_the_largest_arguments(tmp_path):
    r = run_import("--gpu-memory-gib", "16", "--memory-mb", "4096", os.path.join(SIZES, "matmul_large.py"), out=tmp_path)
    s = r.skipped["matmul_large.py"]
    assert s["reason"] == "too_large" and f"above --max-bytes {4 << 30}" in s["detail"]
    assert "8589934592 bytes" in s["detail"]


def test_the_meta_probes_of_a_module_share_one_time_budget(monkeypatch):
    """A module's meta-device forwards together stop at META_MODULE_S (issue 29: a recurrent module
    spent 235 s probing candidate sizes at 15 s each); the one past it is not run, and says why."""
    sys.path.insert(0, os.path.join(SOURCE_DIR, "tools", "dataset"))
    import time

    from task_import import sizing
    monkeypatch.setattr(sizing, "META_FORWARD_S", 0.3)
    monkeypatch.setattr(sizing, "META_MODULE_S", 0.5)

    class Model(torch.nn.Module):
        def forward(self, x):
            time.sleep(10)
            return x

    module = types.ModuleType("slow_meta")
    module.Model, module.get_init_inputs, module.get_inputs = Model, lambda: [], lambda: [torch.randn(4)]
    sizing._meta_spent[0] = 0.0
    start = time.monotonic()
    first, second, third = (sizing.probe(module, 0, {}) for _ in range(3))
    assert time.monotonic() - start < 5  # three 10 s sleeps cut to 0.5 s in all (a loaded machine: margin)
    assert first.forward_error == sizing.SLOW_META and first.outputs is None
    assert second.forward_error == sizing.SPENT_META and third.forward_error == sizing.SPENT_META
