"""tools/dataset/task_import (the importer of KernelBench modules and CUDA-Agent-Ops rows), run as its command
line on the modules under tests/tools/import_modules/ (written for this suite): every module imported
or skipped with the reason its `# expect:` line names; the task files' fields against what this test
computes itself from the module (torch.func.functional_call, state_dict order, bytes, sha256); the
artifact against eager on fresh draws; ids, summary counts, the CUDA-Agent rows (JSONL, parquet)."""
import base64
import hashlib
import io
import json
import math
import os
import re
import subprocess
import sys
import time
import types
import zipfile

import pytest
import torch
import yaml

SOURCE_DIR = os.environ.get("KFORGE_SOURCE_DIR", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
PYTHON = os.environ.get("KFORGE_PYTHON_BIN") or sys.executable
MODULES = os.path.join(SOURCE_DIR, "tests", "tools", "import_modules")
ROWS = os.path.join(MODULES, "cuda_agent", "rows.jsonl")
MAX_BYTES, TIMEOUT_S = 4_000_000, 120
FOLDERS = ("level1", "level2", "level3", "skip")  # slow/ has a run of its own, with a short time limit
REASONS = {"load_error", "stochastic", "non_tensor_output", "data_dependent_shape", "custom_cuda", "constant_output",
           "trace_mismatch", "unsupported_dtype", "too_large", "needs_network"}


def run_import(*args, out):
    importer = os.path.join(SOURCE_DIR, "tools", "dataset")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [importer, os.environ.get("PYTHONPATH")])))
    t0 = time.monotonic()
    p = subprocess.run([PYTHON, "-m", "task_import", "--out", str(out), *args], cwd=SOURCE_DIR, env=env,
                       capture_output=True, text=True, timeout=600)
    return p, time.monotonic() - t0


def kb_files():
    found = []
    for folder in FOLDERS:
        for d, _, names in os.walk(os.path.join(MODULES, folder)):
            found += [os.path.join(d, n) for n in names if n.endswith(".py")]
    return sorted(os.path.relpath(f, SOURCE_DIR) for f in found)


def expected(rel):
    """'imported' for level folders; the reason of the `# expect: REASON` first line under skip/ and slow/."""
    if "/skip/" not in rel and "/slow/" not in rel:
        return "imported"
    first = open(os.path.join(SOURCE_DIR, rel)).readline()
    m = re.match(r"# expect: (\w+)", first)
    assert m and m.group(1) in REASONS, f"{rel}: a skip module starts with '# expect: REASON'"
    return m.group(1)


@pytest.fixture(scope="module")
def kb(tmp_path_factory):
    out = tmp_path_factory.mktemp("kb")
    p, wall = run_import("--format", "kernelbench", "--max-bytes", str(MAX_BYTES), "--timeout-s", str(TIMEOUT_S),
                         *[f"tests/tools/import_modules/{f}" for f in FOLDERS], out=out)
    assert p.returncode == 0, p.stderr
    skipped = [json.loads(line) for line in open(out / "skipped.jsonl")]
    tasks = {f[:-5]: yaml.safe_load(open(out / "tasks" / f)) for f in os.listdir(out / "tasks")}
    summary = json.load(open(out / "import_summary.json"))
    return types.SimpleNamespace(out=out, stderr=p.stderr, wall=wall, skipped=skipped, tasks=tasks, summary=summary,
                                 by_file={t["provenance"]["file"]: t for t in tasks.values()})


def load(rel):
    """The module, run here in a namespace of its own, and a fresh Model."""
    mod = types.ModuleType("check_" + re.sub(r"\W", "_", rel))
    exec(compile(open(os.path.join(SOURCE_DIR, rel)).read(), rel, "exec"), mod.__dict__)
    torch.manual_seed(0)
    return mod, mod.Model(*mod.get_init_inputs())


def draw(d, shape, dtype, gen):
    if d["dist"] == "constant":
        return torch.full(shape, float(d["value"]), dtype=torch.float64).to(dtype)
    if d["dist"] == "randint":
        return torch.randint(d["low"], d["high"], shape, generator=gen).to(dtype)
    if d["dist"] == "uniform":
        return (d["low"] + (d["high"] - d["low"]) * torch.rand(shape, generator=gen, dtype=torch.float64)).to(dtype)
    return (d["mean"] + d["std"] * torch.randn(shape, generator=gen, dtype=torch.float64).clamp(-3.4, 3.4)).to(dtype)


TORCH_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16, "int32": torch.int32,
                "int64": torch.int64, "bool": torch.bool}
IMPORTED = [f for f in kb_files() if expected(f) == "imported"]


def test_every_module_is_imported_or_skipped_for_its_reason(kb):
    files = kb_files()
    assert len(files) >= 24 and len(IMPORTED) >= 15
    skipped = {s["file"]: s for s in kb.skipped}
    for rel in files:
        want = expected(rel)
        if want == "imported":
            assert rel in kb.by_file, f"{rel} not imported: {skipped.get(rel)}"
        else:
            assert rel in skipped, f"{rel} imported, expected {want}"
            assert skipped[rel]["reason"] == want, skipped[rel]
            assert skipped[rel]["row"] is None and skipped[rel]["detail"]
    assert set(skipped) | set(kb.by_file) == set(files)
    assert {s["reason"] for s in kb.skipped} == REASONS  # one module at least for every reason


def test_summary_counts_match_the_files_and_speed_is_printed(kb):
    counts = {r: sum(1 for s in kb.skipped if s["reason"] == r) for r in REASONS}
    assert kb.summary["imported"] == len(kb.tasks) == len(IMPORTED)
    assert kb.summary["skipped"] == counts and set(kb.summary) == {"imported", "skipped", "seconds"}
    assert 0 < kb.summary["seconds"] < kb.wall
    m = re.search(r"(\d+) modules in [\d.]+ s \(([\d.]+) modules/s\)", kb.stderr)
    assert m and int(m.group(1)) == len(kb_files()) and float(m.group(2)) > 0
    print(f"\nimport speed: {m.group(2)} modules/s ({m.group(1)} modules, {kb.summary['seconds']} s)")


def test_ids_are_unique_and_name_level_and_stem(kb):
    for tid, t in kb.tasks.items():
        rel = t["provenance"]["file"]
        level = int(re.search(r"/level(\d)/", rel).group(1))
        stem = re.sub(r"[^a-z0-9]", "_", os.path.basename(rel)[:-3].lower())
        assert tid == t["id"] == f"kb_l{level}_{stem}"
        assert t["provenance"]["level"] == level
    assert len({t["id"] for t in kb.tasks.values()}) == len(kb.tasks)


@pytest.mark.parametrize("rel", IMPORTED)
def test_task_fields_follow_the_module(kb, rel):
    t = kb.by_file[rel]
    mod, model = load(rel)
    inputs = mod.get_inputs()
    state = model.state_dict()
    params = {n for n, _ in model.named_parameters()}
    init = list(mod.get_init_inputs())
    recorded = bool(init) and all(isinstance(v, (bool, int, float)) for v in init)
    assert list(t) == ["kforge_task", "id", "source", "split", "description", "seed", "dtype", "arguments", "outputs",
                       "tolerance", "cost", "provenance", "program", "reference"] + (["init_inputs"] if recorded else [])
    assert t.get("init_inputs") == (init if recorded else None)
    assert t["kforge_task"] == 1 and t["source"] == "kernelbench" and t["split"] == "train"
    assert isinstance(t["seed"], int) and t["description"]
    names = [f"x{i}" for i in range(len(inputs))] + list(state)
    assert [a["name"] for a in t["arguments"]] == names
    assert [a["role"] for a in t["arguments"]] == ["input"] * len(inputs) + \
        ["parameter" if k in params else "buffer" for k in state]
    tensors = list(inputs) + list(state.values())
    assert [a["shape"] for a in t["arguments"]] == [list(x.shape) for x in tensors]
    assert [a["dtype"] for a in t["arguments"]] == [str(x.dtype).replace("torch.", "") for x in tensors]
    assert t["dtype"] == next(a["dtype"] for a in t["arguments"] if a["dtype"] in ("float32", "float16", "bfloat16"))
    assert t["tolerance"] == ({"atol": 1e-4, "rtol": 1e-4} if t["dtype"] == "float32" else {"atol": 1e-2, "rtol": 1e-2})
    with torch.no_grad():
        out = model(*inputs)
    outs = out if isinstance(out, tuple) else (out,)
    assert t["outputs"] == [{"name": f"y{i}", "shape": list(y.shape), "dtype": str(y.dtype).replace("torch.", "")}
                            for i, y in enumerate(outs)]
    nbytes = sum(x.numel() * x.element_size() for x in tensors + list(outs))
    assert t["cost"]["min_bytes"] == nbytes
    text = open(os.path.join(SOURCE_DIR, rel), encoding="utf-8").read()
    assert t["program"] == text
    assert t["provenance"] == {"generator": "kforge tasks import", "format": "kernelbench", "file": rel,
                               "file_sha256": hashlib.sha256(text.encode()).hexdigest(), "row": None,
                               "level": t["provenance"]["level"], "ops": None, "tolerance_profile": "kforge"}
    ref = t["reference"]
    data = base64.b64decode(ref["artifact"])
    assert ref["kind"] == "torchscript" and ref["sha256"] == hashlib.sha256(data).hexdigest()
    assert ref["module_mode"] == ("train" if model.training else "eval")


@pytest.mark.parametrize("rel", IMPORTED)
def test_artifact_reproduces_eager_on_fresh_draws(kb, rel):
    t = kb.by_file[rel]
    mod, model = load(rel)
    model.train(t["reference"]["module_mode"] == "train")
    loaded = torch.jit.load(io.BytesIO(base64.b64decode(t["reference"]["artifact"])))
    assert not list(loaded.parameters()) and not list(loaded.buffers())  # weights are arguments, not baked
    n = sum(1 for a in t["arguments"] if a["role"] == "input")
    for k in range(2):
        gen = torch.Generator().manual_seed(100 + k)
        args = [draw(a["draw"], a["shape"], TORCH_DTYPES[a["dtype"]], gen) for a in t["arguments"]]
        eager_args = [a.clone() for a in args]
        with torch.no_grad():
            got = loaded(*args)
            want = torch.func.functional_call(model, dict(zip([a["name"] for a in t["arguments"][n:]], eager_args[n:])),
                                              tuple(eager_args[:n]))
        want = want if isinstance(want, tuple) else (want,)
        assert isinstance(got, tuple) and len(got) == len(want) == len(t["outputs"])
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype
            torch.testing.assert_close(g, w, atol=t["tolerance"]["atol"], rtol=t["tolerance"]["rtol"], equal_nan=True)
        for a, e in zip(args, eager_args):  # in-place state updates (train-mode BatchNorm) land alike
            assert torch.equal(a, e)


def test_convolutions_are_traced_in_float32(kb):
    # The trace bakes cudnn.allow_tf32 into every aten::_convolution; with it on (torch's default), the
    # artifact ran its convolutions in TF32 on the GPU (47 KernelBench modules rejected as
    # artifact_mismatch by the GPU stage on the H100, about 5e-4 off eager). Every imported artifact
    # passes allow_tf32 = False, and so does a convolution traced while the global flag is on.
    sys.path.insert(0, os.path.join(SOURCE_DIR, "tools", "dataset"))
    try:
        from task_import.artifact import tf32_convolutions, trace
    finally:
        sys.path.pop(0)
    convs = 0
    for t in kb.tasks.values():
        loaded = torch.jit.load(io.BytesIO(base64.b64decode(t["reference"]["artifact"])))
        graph = loaded.inlined_graph
        convs += len(graph.findAllNodes("aten::_convolution"))
        assert tf32_convolutions(loaded) == 0, t["id"]
    assert convs > 0, "the test modules hold convolutions"
    saved = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = True
    try:
        conv = torch.nn.Conv2d(3, 4, 3)
        data, _ = trace(conv, 1, ["weight", "bias"], (torch.randn(1, 3, 8, 8), conv.weight.detach(), conv.bias.detach()))
        assert torch.backends.cudnn.allow_tf32 is True  # the flag is restored
        assert tf32_convolutions(torch.jit.load(io.BytesIO(data))) == 0
        with torch.backends.cudnn.flags(allow_tf32=True):
            plain = torch.jit.trace(conv, torch.randn(1, 3, 8, 8))
        assert tf32_convolutions(plain) == 1  # what the importer traced before
    finally:
        torch.backends.cudnn.allow_tf32 = saved


def arg(t, name):
    return next(a for a in t["arguments"] if a["name"] == name)


def test_draws_follow_the_source_and_torch_init(kb):
    t = kb.tasks
    bound = 1 / math.sqrt(3 * 3 * 3)
    assert arg(t["kb_l1_conv2d_basic"], "conv.weight")["draw"] == {"dist": "uniform", "low": -bound, "high": bound}
    assert arg(t["kb_l1_conv2d_basic"], "conv.bias")["draw"] == {"dist": "uniform", "low": -bound, "high": bound}
    assert arg(t["kb_l1_conv2d_basic"], "x0")["draw"] == {"dist": "normal", "mean": 0.0, "std": 1.0}
    assert arg(t["kb_l1_log_of_uniform"], "x0")["draw"] == {"dist": "uniform", "low": 0.0, "high": 1.0}
    assert arg(t["kb_l1_embedding_lookup"], "x0")["draw"] == {"dist": "randint", "low": 0, "high": 50}
    assert arg(t["kb_l1_embedding_lookup"], "table.weight")["draw"] == {"dist": "normal", "mean": 0.0, "std": 1.0}
    assert arg(t["kb_l2_module_constants"], "x1")["draw"] == {"dist": "randint", "low": 0, "high": 2}
    bn = t["kb_l2_conv_bn_relu_train"]
    # All equal in the module's state: moved around the value (kforge refuses a constant float
    # argument); the variance keeps its sign.
    assert arg(bn, "bn.running_mean")["draw"] == {"dist": "uniform", "low": -0.5, "high": 0.5}
    assert arg(bn, "bn.running_var")["draw"] == {"dist": "uniform", "low": 0.5, "high": 1.5}
    assert arg(bn, "bn.weight")["draw"] == {"dist": "uniform", "low": 0.5, "high": 1.5}
    assert arg(bn, "bn.bias")["draw"] == {"dist": "uniform", "low": -0.5, "high": 0.5}
    assert not [(tid, a["name"]) for tid, task in t.items() for a in task["arguments"]
                if a["draw"]["dist"] == "constant" and a["dtype"].startswith(("float", "bfloat"))]
    assert arg(bn, "bn.num_batches_tracked") == {"name": "bn.num_batches_tracked", "role": "buffer", "shape": [],
                                                 "dtype": "int64", "draw": {"dist": "constant", "value": 0}}
    h = 1 / math.sqrt(12)
    assert arg(t["kb_l3_tiny_lstm"], "lstm.weight_hh_l0")["draw"] == {"dist": "uniform", "low": -h, "high": h}
    xavier = math.sqrt(6 / (48 + 16))
    assert arg(t["kb_l3_tiny_transformer_block"], "attn.in_proj_weight")["draw"] == \
        {"dist": "uniform", "low": -xavier, "high": xavier}


def test_modes_dtypes_and_flops(kb):
    t = kb.tasks
    assert t["kb_l2_linear_bn_eval"]["reference"]["module_mode"] == "eval"
    assert t["kb_l2_conv_bn_relu_train"]["reference"]["module_mode"] == "train"
    assert t["kb_l2_linear_bf16"]["dtype"] == "bfloat16" and t["kb_l2_linear_bf16"]["tolerance"] == {"atol": 0.01, "rtol": 0.01}
    assert t["kb_l1_argmax_rows"]["outputs"][0]["dtype"] == "int64"
    assert t["kb_l1_matmul_square"]["cost"]["flops"] == 2 * 24 ** 3
    assert t["kb_l1_conv2d_basic"]["cost"]["flops"] == 2 * 2 * 8 * 10 * 10 * 3 * 9  # FlopCounterMode's conv
    assert t["kb_l1_relu_op"]["cost"]["flops"] == 16 * 64  # one per output element
    assert t["kb_l2_two_in_two_out"]["cost"]["flops"] == 2 * 7 * 7 * 5 + 35 + 49 + 35 + 35
    for tid in ("kb_l2_inverse_matmul", "kb_l3_tiny_lstm"):  # an op without a formula: flops omitted
        assert "flops" not in t[tid]["cost"] and t[tid]["cost"]["min_bytes"] > 0
    notes = {json.loads(line)["id"]: json.loads(line)["notes"] for line in open(kb.out / "imported.jsonl")}
    assert any("linalg_inv" in n for n in notes["kb_l2_inverse_matmul"])


def test_init_inputs_are_recorded_when_every_value_is_a_bool_or_a_number(kb):
    """get_init_inputs() becomes the task's init_inputs (an extension's ModelNew gets them in order):
    Conv2d's [3, 8] is recorded; LayerNorm's [(6, 8)] is not (a tuple), and a note says why."""
    t = kb.tasks
    assert t["kb_l1_conv2d_basic"]["init_inputs"] == [3, 8]
    assert "init_inputs" not in t["kb_l1_layernorm_op"] and "init_inputs" not in t["kb_l1_relu_op"]
    notes = {json.loads(line)["id"]: json.loads(line)["notes"] for line in open(kb.out / "imported.jsonl")}
    assert any("init_inputs not recorded: get_init_inputs() holds tuple" in n for n in notes["kb_l1_layernorm_op"])


def test_tensors_made_in_forward_follow_the_arguments_device(kb):
    t = kb.tasks["kb_l2_positions_in_forward"]
    data = base64.b64decode(t["reference"]["artifact"])
    code = "".join(zipfile.ZipFile(io.BytesIO(data)).read(n).decode() for n in zipfile.ZipFile(io.BytesIO(data)).namelist()
                   if n.endswith(".py"))
    assert "prim.device(" in code and '"cpu"' not in code
    graph = torch.jit.load(io.BytesIO(data)).graph
    assert not [n for n in graph.findAllNodes("prim::Constant") if n.output().type().kind() == "DeviceObjType"]


def test_kforge_profile_is_the_eval_config_default():
    cfg = yaml.safe_load(open(os.path.join(SOURCE_DIR, "configs", "eval.yaml")))["precision"]["profiles"]
    sys.path.insert(0, os.path.join(SOURCE_DIR, "tools", "dataset"))
    try:
        from task_import.task_yaml import TOLERANCES
    finally:
        sys.path.pop(0)
    assert TOLERANCES["kforge"] == cfg["default"] and TOLERANCES["cuda-agent"] == cfg["cuda-agent"]


def check_cuda_agent(out, rows_file):
    summary = json.load(open(out / "import_summary.json"))
    assert summary["imported"] == 3 and summary["skipped"]["load_error"] == 2 and summary["skipped"]["stochastic"] == 1
    skipped = {s["row"]: s for s in map(json.loads, open(out / "skipped.jsonl"))}
    assert {r: s["reason"] for r, s in skipped.items()} == {2: "stochastic", 3: "load_error", 4: "load_error"}
    rows = [json.loads(line) for line in open(ROWS)]
    digest = hashlib.sha256(open(os.path.join(SOURCE_DIR, rows_file), "rb").read()).hexdigest()
    tasks = {f[:-5]: yaml.safe_load(open(out / "tasks" / f)) for f in os.listdir(out / "tasks")}
    want_ids = {f"ca_{r}_{hashlib.sha256(rows[r]['code'].encode()).hexdigest()[:8]}": r for r in (0, 1, 5)}
    assert set(tasks) == set(want_ids)
    for tid, r in want_ids.items():
        t = tasks[tid]
        assert t["source"] == "cuda-agent-ops" and t["split"] == "heldout" and t["program"] == rows[r]["code"]
        assert t["tolerance"] == {"atol": 0.01, "rtol": 0.01}
        ops = rows[r]["ops"] if isinstance(rows[r]["ops"], list) else ["nn.Conv1d", "torch.tanh"]
        assert t["provenance"] == {"generator": "kforge tasks import", "format": "cuda-agent", "file": rows_file,
                                   "file_sha256": digest, "row": r, "level": None, "ops": ops,
                                   "tolerance_profile": "cuda-agent"}


def test_cuda_agent_jsonl_rows(tmp_path):
    rel = os.path.relpath(ROWS, SOURCE_DIR)
    p, _ = run_import("--format", "cuda-agent", "--tolerance", "cuda-agent", "--split", "heldout", rel, out=tmp_path)
    assert p.returncode == 0, p.stderr
    check_cuda_agent(tmp_path, rel)


def test_cuda_agent_parquet_rows(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq
    rows = [json.loads(line) for line in open(ROWS)]
    # Parquet holds one type per column: ops as text (as a dataset may store them), code null where absent.
    table = pa.table({"code": [r.get("code") for r in rows],
                      "ops": [r["ops"] if isinstance(r["ops"], str) else json.dumps(r["ops"]) for r in rows],
                      "data_source": [r["data_source"] for r in rows]})
    path = tmp_path / "rows.parquet"
    pq.write_table(table, path)
    p, _ = run_import("--format", "cuda-agent", "--tolerance", "cuda-agent", "--split", "heldout", str(path),
                      out=tmp_path / "out")
    assert p.returncode == 0, p.stderr
    check_cuda_agent(tmp_path / "out", str(path))


def test_modules_past_the_time_limit_are_skipped_and_killed(tmp_path):
    p, wall = run_import("--format", "kernelbench", "--timeout-s", "2", "tests/tools/import_modules/slow", out=tmp_path)
    assert p.returncode == 0, p.stderr
    skipped = {os.path.basename(s["file"]): s for s in map(json.loads, open(tmp_path / "skipped.jsonl"))}
    for name, s in skipped.items():
        assert s["reason"] == expected(s["file"]), s
    assert "did not finish in 2 s" in skipped["sleeps_forever.py"]["detail"]
    assert "killed after 14 s" in skipped["ignores_the_alarm.py"]["detail"]
    assert len(skipped) == 2 and wall < 60


def test_a_crashing_module_ends_its_worker_only(kb):
    (s,) = [s for s in kb.skipped if s["file"].endswith("segfault_in_forward.py")]
    assert s["reason"] == "load_error" and "SIGSEGV" in s["detail"]


def test_in_process_mode_imports_alike(tmp_path, kb):
    rel = "tests/tools/import_modules/level2/conv_bn_relu_train.py"
    p, _ = run_import("--format", "kernelbench", "--in-process", rel, "tests/tools/import_modules/skip/dropout_train.py",
                      out=tmp_path)
    assert p.returncode == 0, p.stderr
    (s,) = [json.loads(line) for line in open(tmp_path / "skipped.jsonl")]
    assert s["reason"] == "stochastic"
    t = yaml.safe_load(open(tmp_path / "tasks" / "kb_l2_conv_bn_relu_train.yaml"))
    forked = kb.tasks["kb_l2_conv_bn_relu_train"]
    assert t["arguments"] == forked["arguments"] and t["outputs"] == forked["outputs"] and t["cost"] == forked["cost"]


def test_program_is_the_source_byte_for_byte(tmp_path):
    # Trailing spaces, a tab, CRLF line ends and non-ASCII text: the YAML scalar must give them back.
    text = ("import torch  \r\nimport torch.nn as nn\r\n\r\n\r\nclass Model(nn.Module):\r\n"
            '    """Doubles x (\u00d72).\t"""\r\n    def forward(self, x):\r\n        return x * 2\r\n\r\n\r\n'
            "def get_inputs():\r\n    return [torch.randn(3)]\r\n\r\n\r\ndef get_init_inputs():\r\n    return []\r\n\r\n")
    path = tmp_path / "level1" / "odd_text.py"
    path.parent.mkdir()
    path.write_bytes(text.encode("utf-8"))
    p, _ = run_import("--format", "kernelbench", str(path), out=tmp_path / "out")
    assert p.returncode == 0, p.stderr
    t = yaml.safe_load(open(tmp_path / "out" / "tasks" / "kb_l1_odd_text.yaml", encoding="utf-8", newline=""))
    assert t["program"] == text and t["provenance"]["file_sha256"] == hashlib.sha256(text.encode()).hexdigest()


def test_limit_and_a_level_option(tmp_path):
    p, _ = run_import("--format", "kernelbench", "--limit", "2", "--level", "2", "--seed", "7",
                      "tests/tools/import_modules/level1/relu_op.py", "tests/tools/import_modules/skip/syntax_error.py",
                      "tests/tools/import_modules/level1/sum_reduce.py", out=tmp_path)
    assert p.returncode == 0, p.stderr
    summary = json.load(open(tmp_path / "import_summary.json"))
    assert summary["imported"] == 1 and sum(summary["skipped"].values()) == 1
    assert os.listdir(tmp_path / "tasks") == ["kb_l1_relu_op.yaml"]  # the folder's level wins over --level


@pytest.mark.parametrize("args", [
    ["--format", "kernelbench", "no/such/file.py"],
    ["--format", "cuda-agent", "tests/tools/import_modules/level1/relu_op.py"],
    ["--format", "pytorch", "tests/tools/import_modules/level1"],
    ["--format", "kernelbench", "--limit", "-1", "tests/tools/import_modules/level1"],
    ["--format", "cuda-agent", "--level", "1", "tests/tools/import_modules/cuda_agent/rows.jsonl"],
])
def test_bad_arguments_exit_2(tmp_path, args):
    p, _ = run_import(*args, out=tmp_path)
    assert p.returncode == 2 and p.stderr.strip(), p.stderr


def draws_module():
    sys.path.insert(0, os.path.join(SOURCE_DIR, "tools", "dataset"))
    try:
        from task_import import draws
    finally:
        sys.path.pop(0)
    return draws


@pytest.mark.parametrize("n", [16, 100, 10000])
def test_draw_fits_of_common_inputs(n):
    draws = draws_module()
    torch.manual_seed(n)
    u, z = torch.rand(n), torch.randn(n)
    assert draws.infer("x0", "input", u, None, "uniform")[0] == {"dist": "uniform", "low": 0.0, "high": 1.0}
    assert draws.infer("x0", "input", z, None, "normal")[0] == {"dist": "normal", "mean": 0.0, "std": 1.0}
    assert draws.infer("x0", "input", z * 0.02 + 3, None, None)[0] == {"dist": "normal", "mean": 3.0, "std": 0.02}
    if n >= 100:  # the kurtosis decides without a hint from the source
        assert draws.infer("x0", "input", u * 2 - 1, None, None)[0] == {"dist": "uniform", "low": -1.0, "high": 1.0}
    # |randn| keeps its sign: a normal fit would draw negatives, so a uniform from 0.
    half = draws.infer("x0", "input", z.abs(), None, None)[0]
    assert half["dist"] == "uniform" and half["low"] == 0.0 and half["high"] >= float(z.abs().max())


def test_draws_of_integers_constants_and_init_bounds():
    draws = draws_module()
    assert draws.infer("x0", "input", torch.randint(-3, 7, (50,)), None, None)[0] == {"dist": "randint", "low": -3, "high": 7}
    assert draws.infer("x0", "input", torch.zeros(5, dtype=torch.bool), None, None)[0] == {"dist": "constant", "value": 0}
    assert draws.infer("x0", "input", torch.full((3,), 7, dtype=torch.int32), None, None)[0] == {"dist": "constant", "value": 7}
    assert draws.infer("x0", "input", torch.full((3,), 2.5), None, None)[0] == {"dist": "uniform", "low": 1.25, "high": 3.75}
    assert draws.infer("x0", "input", torch.full((3,), -2.0), None, None)[0] == {"dist": "uniform", "low": -3.0, "high": -1.0}
    assert draws.infer("x0", "input", torch.full((3,), float("inf")), None, None)[0] == {"dist": "uniform", "low": -0.5, "high": 0.5}
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(40, 8), torch.nn.ConvTranspose2d(8, 4, 3))
    b0, b1 = 1 / math.sqrt(40), 1 / math.sqrt(4 * 9)  # ConvTranspose's fan_in is its weight's size(1) x kernel
    for name, b in (("0.weight", b0), ("0.bias", b0), ("1.weight", b1), ("1.bias", b1)):
        t = model.state_dict()[name]
        assert draws.infer(name, "parameter", t, model, None)[0] == {"dist": "uniform", "low": -b, "high": b}, name
    w = torch.empty(64, 32)
    torch.nn.init.normal_(w, std=0.02)
    assert draws.infer("fc.weight", "parameter", w, None, None)[0] == {"dist": "normal", "mean": 0.0, "std": 0.02}


def test_hostile_modules_are_confined_and_the_run_goes_on(tmp_path):
    """Each module of import_modules/hostile/ attacks the machine (README.md, The sandbox): the run
    survives all of them, writes the control's task, and no module wrote outside its worker's
    directory, kept a daemon alive, saw the importer's environment or read a file only root may."""
    import shutil
    mods = tmp_path / "mods"
    shutil.copytree(os.path.join(MODULES, "hostile"), mods)
    shutil.copy(os.path.join(MODULES, "level1", "relu_op.py"), mods / "relu_op.py")
    (mods / "secret.txt").write_text("only root reads this")
    os.chmod(mods / "secret.txt", 0o600)
    os.chmod(tmp_path, 0o700)
    out = tmp_path / "out"
    p, _ = run_import("--format", "kernelbench", "--memory-mb", "4096", "--max-processes", "24", str(mods), out=out)
    assert p.returncode == 0, p.stderr
    details = {os.path.basename(s["file"]): s for s in map(json.loads, (out / "skipped.jsonl").read_text().splitlines())}
    assert sorted(os.listdir(out / "tasks")) == ["kb_lnull_relu_op.yaml"], p.stderr  # the control, after the others
    for name, s in details.items():  # each skipped for the reason its `# expect:` line names
        assert f"# expect: {s['reason']}\n" == (mods / name).read_text().splitlines(keepends=True)[0], s
    assert set(details) == {"escapes.py", "fork_bomb.py", "kills_its_parent.py", "memory_hog.py", "reads_a_secret.py",
                            "setsid_orphan.py"}
    esc = details["escapes.py"]["detail"]
    assert "env=HOME,LANG,OMP_NUM_THREADS,PATH,TMPDIR " in esc and "fds=0,1,2,3,4" in esc, esc  # 4: the listing's own
    assert re.search(r"cwd=(\S+) .*home=\1 ", esc) and "cwd=" + str(tmp_path) not in esc, esc
    assert "MemoryError" in details["memory_hog.py"]["detail"]
    assert re.search(r"forked \d+ before Resource temporarily unavailable", details["fork_bomb.py"]["detail"])
    assert "x" * 100 not in p.stderr and "from-os-system" not in p.stderr  # module output is the worker's, capped
    assert not (out / "in_flight.json").exists()
    orphans = [pid for pid in os.listdir("/proc") if pid.isdigit() and str(mods) in proc_cmdline(pid)]
    assert not orphans, orphans  # the setsid daemon ended with its worker
    if os.geteuid() == 0:  # run as root, the worker is `nobody`: it may write and read only what anyone may
        assert "uid=65534" in esc
        assert sorted(os.listdir(mods)) == sorted(set(details) | {"relu_op.py", "secret.txt"}), os.listdir(mods)
        assert "PermissionError" in details["reads_a_secret.py"]["detail"]
        assert "forked 2" in details["fork_bomb.py"]["detail"]  # 20-odd: RLIMIT_NPROC 24 holds for nobody


def proc_cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""
