"""Imported tasks end to end on a GPU host (ctest python.imported_eval_gpu, label gpu; it skips,
saying why, without one): the KernelBench-format test modules of levels 1-3 imported by
`kforge tasks import`, baselined by the dataset's GPU stage (tools/dataset/synth_gpu.py, eager and
torch.compile), served by `kforge serve` with only measured rows, and a `kforge-evaluate --report`
run against a scripted OpenAI-compatible endpoint that answers with stored candidates
(datasets/imported_candidates/: correct, wrong, cheating). The report's numbers must be what
those candidates deserve, computed here from the rows.

KFORGE_REPORT_OUT=DIR keeps the run's evidence there (the listing, the rows, the report folder)
for tools/bench/RESULTS.md."""
import collections
import json
import math
import os
import shutil
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from client_harness import KFORGE, SOURCE_DIR, Server  # noqa: E402  (adds tools/python to sys.path)
from kforge_client import Client  # noqa: E402
from test_evaluate_report import CandidateChat, evaluate, gpu_missing  # noqa: E402

sys.path.insert(0, os.path.join(SOURCE_DIR, "tools", "dataset"))
from synth_gpu.records import read_records  # noqa: E402  (the GPU stage's own reader of its records)

MODULES = os.path.join(SOURCE_DIR, "tests", "tools", "import_modules")
IMPORTED = os.path.join(SOURCE_DIR, "datasets", "imported_candidates")
# relu_op.py is copied three times so that each relu candidate has a task of its own.
RELU_COPIES = ("relu_a", "relu_b", "relu_c")
# task -> (candidate, the verdict it deserves).
IMPORTED_CANDIDATES = {
    "kb_l1_relu_a": (os.path.join(IMPORTED, "kb_l1_relu_op", "fused"), "pass"),
    "kb_l1_relu_b": (os.path.join(IMPORTED, "kb_l1_relu_op", "wrong_identity"), "fail"),
    "kb_l1_relu_c": (os.path.join(IMPORTED, "kb_l1_relu_op", "cheat_rewrites_input"), "cheat"),
    "kb_l1_softmax_rows": (os.path.join(IMPORTED, "kb_l1_softmax_rows", "rowwise"), "pass"),
}


class ImportedCandidateChat(CandidateChat):
    table = IMPORTED_CANDIDATES


def module_files():
    """level -> the test modules of that level (file names)."""
    return {level: sorted(f for f in os.listdir(os.path.join(MODULES, level)) if f.endswith(".py"))
            for level in ("level1", "level2", "level3")}


def import_and_baseline(tmp_path):
    """The test modules (with the relu copies) imported, then baselined on the GPU and merged back:
    the dataset folder and the stage's records by task id."""
    level1 = tmp_path / "level1"
    shutil.copytree(os.path.join(MODULES, "level1"), level1)
    for name in RELU_COPIES:
        shutil.copy(level1 / "relu_op.py", level1 / f"{name}.py")
    imp = tmp_path / "imp"
    # --no-input-check: the test modules are small fixtures, and the input checks (sensitivity.h) refuse
    # three at their sizes (conv_bn_relu_train's conv bias, which train-mode BatchNorm cancels; a
    # channel of argmax_rows and of tiny_mlp's last layer): every module is to be served here.
    subprocess.run([KFORGE, "tasks", "import", "--format", "kernelbench", str(level1), os.path.join(MODULES, "level2"),
                    os.path.join(MODULES, "level3"), "--out", str(imp), "--no-input-check"], check=True, timeout=300)
    stage = [sys.executable, os.path.join(SOURCE_DIR, "tools", "dataset", "synth_gpu.py")]
    env = dict(os.environ, KFORGE_BIN=KFORGE)
    subprocess.run(stage + [str(imp / "dataset.h5"), "--out", str(imp / "gpu")], check=True, env=env, timeout=900)
    subprocess.run(stage + ["--merge", str(imp / "dataset.h5"), "--out", str(imp / "gpu"), "--no-plots"],
                   check=True, env=env, timeout=300)
    return imp, {r["id"]: r for r in read_records(str(imp / "gpu"))}


def deserved(rows):
    """The report's overall metrics as the stored candidates deserve them, from the rows alone."""
    n = len(rows)
    passed = [x for x in rows if x["reward"]["verdict"] == "pass"]
    se = [x["reward"]["eager"]["speedup"]["point"] for x in passed]
    sc = [x["reward"]["torch_compile"]["speedup"]["point"] for x in passed]
    want = {"pass_rate": len(passed) / n, "fast_0": len(passed) / n,
            "cheat_rate": sum(x["reward"]["verdict"] == "cheat" for x in rows) / n,
            "faster_than_eager_rate": sum(bool(x["reward"]["eager"]["beats"]) for x in passed) / n,
            "faster_than_compile_rate": sum(bool(x["reward"]["torch_compile"]["beats"]) for x in passed) / n,
            "geomean_speedup_eager": math.exp(sum(map(math.log, se)) / n),
            "geomean_speedup_compile": math.exp(sum(map(math.log, sc)) / n),
            "geomean_speedup_eager_correct": math.exp(sum(map(math.log, se)) / len(se)),
            "geomean_speedup_compile_correct": math.exp(sum(map(math.log, sc)) / len(sc))}
    for p in (0.5, 1.0, 1.5, 2.0):
        want[f"fast_{p:g}"] = sum(s > p for s in se) / n
    return want


def keep(tmp_path, listed, records, rows, report):
    out = os.environ.get("KFORGE_REPORT_OUT")
    if not out:
        return
    os.makedirs(out, exist_ok=True)
    stage = {k: {f: r.get(f) for f in ("status", "reason", "error", "eager_ms", "compile_ms", "flags")}
             for k, r in records.items()}
    with open(os.path.join(out, "imported_served.json"), "w") as f:
        json.dump({"listed": listed, "stage": stage}, f, indent=1)
    with open(os.path.join(out, "imported_rows.jsonl"), "w") as f:
        f.writelines(json.dumps(x) + "\n" for x in rows)
    shutil.copytree(report, os.path.join(out, "imported_report"), dirs_exist_ok=True)


def test_gpu_imported_set_is_baselined_served_and_judged_as_the_candidates_deserve(tmp_path):
    why = gpu_missing()
    if why:
        print(f"KFORGE_SKIPPED: {why}")
        pytest.skip(why)
    imp, records = import_and_baseline(tmp_path)
    files = module_files()
    n_modules = sum(map(len, files.values())) + len(RELU_COPIES)
    assert n_modules >= 20 and len(records) == n_modules, sorted(records)
    ok = {k for k, r in records.items() if r["status"] == "ok"}
    rejected = {k: r["reason"] for k, r in records.items() if k not in ok}  # asserted empty at the end
    assert set(IMPORTED_CANDIDATES) <= ok, rejected
    # Served: only measured rows (serve_unmeasured false), each with both baselines, its level and profile.
    server = Server(tmp_path, record=False, scheduler={"gpus": -1},
                    tasks={"samples": False, "datasets": [str(imp)], "serve_unmeasured": False})
    try:
        with Client(server.endpoint) as c:
            assert c.health()["gpus"], "a GPU is visible but the server has no GPU lane"
            listed = {t["name"]: t for t in c.tasks(source="kernelbench", limit=1000)["tasks"]}
            prompt = c.reset("kb_l3_tiny_mlp")
            c.close_episode(prompt["episode"])
        assert set(listed) == ok, sorted(set(listed) ^ ok)
        for name, t in listed.items():
            r = records[name]
            assert t["eager_ms"] == pytest.approx(r["eager_ms"]) and t["compile_ms"] == pytest.approx(r["compile_ms"]), (t, r)
            assert t["level"] == int(name[4]) and t["tolerance_profile"] == "kforge", t
        with open(os.path.join(MODULES, "level3", "tiny_mlp.py")) as f:
            assert f.read().strip() in prompt["observation"], prompt["observation"][:2000]  # the program as it is
        _, rows, doc, md, report = evaluate(server, tmp_path, list(IMPORTED_CANDIDATES), chat=ImportedCandidateChat)
    finally:
        server.stop()
    keep(tmp_path, listed, records, rows, report)
    by_task = {x["task"]: x for x in rows}
    for task, (_, verdict) in IMPORTED_CANDIDATES.items():
        x = by_task[task]
        assert x["reward"]["verdict"] == verdict, (task, x["reward"])
        assert x["task_meta"]["level"] == 1 and x["task_meta"]["source"] == "kernelbench", x["task_meta"]
        if verdict == "pass":  # timed against both stored baselines, rescaled to now
            assert x["reward"]["eager"]["speedup"]["point"] > 0 and x["reward"]["torch_compile"]["available"] is True, x["reward"]
    run = doc["runs"][0]
    assert (run["episodes"], run["judged"], run["unjudged"], run["errors"]) == (4, 4, 0, 0)
    assert run["verdicts"] == {"pass": 2, "fail": 1, "cheat": 1}
    v = {k: m["value"] for k, m in run["overall"]["metrics"].items()}
    want = deserved(rows)
    assert want["pass_rate"] == 0.5 and want["cheat_rate"] == 0.25
    for k, w in want.items():
        assert v[k] == pytest.approx(w, rel=1e-9), (k, v[k], w)
    assert "| level 1 |" in md and "tolerance profile: kforge" in md, md
    # KernelBench's own table: the four level-1 tasks played, two solved (correct at any speed: fast_0).
    kb = {lv["level"]: lv for lv in run["kernelbench"]}
    assert kb[1]["played_tasks"] == 4 and kb[1]["fast_p"]["0"] == pytest.approx(2 / kb[1]["problems"]), kb
    assert "### KernelBench's own metrics per level" in md, md
    # The denominator: what the server held of source kernelbench but did not serve is the stage's
    # rejections (the import skipped nothing), and the report says so.
    want = [{"source": "kernelbench", "stage": "gpu_stage", "reason": r, "rows": n, "level": lv}
            for (r, lv), n in sorted(collections.Counter((r, int(k[4])) for k, r in rejected.items()).items())]
    assert run["environment"]["left_out"] == want, run["environment"]
    assert ("tasks of these sources the server left out: none" in md) == (not want), md
    assert not rejected, rejected  # every imported module baselined and served
