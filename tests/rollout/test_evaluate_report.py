"""kforge-evaluate --report end to end: a real `kforge serve` of the sample tasks, a scripted
OpenAI-compatible endpoint that writes a stored candidate per task and submits it, and the
report's numbers against what those candidates deserve.

Without a GPU (ctest python.report_e2e) nothing can be judged: the report must say so, count
every episode as unjudged, the endpoint's failures as errors, define no metric, and still record
what the server and the prompts tell (version, no GPU lanes, dtypes, operator counts, tolerances).
On a GPU host (ctest python.report_gpu, label gpu; it skips saying why elsewhere) two correct
candidates that beat eager clearly, a wrong one and a cheat from anticheat/corpus/ give pass rate
and fast_0 to 1 of 1/2, cheat rate 1/4, and fast_p at the speedups the rows record."""
import http.server
import json
import math
import os
import shutil
import subprocess
import sys
import threading

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from client_harness import SOURCE_DIR, Server  # noqa: E402  (adds tools/python to sys.path)
from kforge_client import Client  # noqa: E402
from kforge_client.report.markdown import esc  # noqa: E402
from client_harness import StandInChat, client_env  # noqa: E402
from test_client_evaluate import tool_call  # noqa: E402

SAMPLES = os.path.join(SOURCE_DIR, "datasets", "samples", "candidates")
CORPUS = os.path.join(SOURCE_DIR, "anticheat", "corpus")
# task -> (candidate folder, the verdict it deserves); expect.yaml beside each says the same.
GPU_CANDIDATES = {
    "gelu_scale_residual": (os.path.join(SAMPLES, "gelu_scale_residual", "fused"), "pass"),  # beats eager clearly
    "logsumexp_sub": (os.path.join(SAMPLES, "logsumexp_sub", "fused"), "pass"),  # beats eager clearly
    "layernorm_gelu_bf16": (os.path.join(SAMPLES, "layernorm_gelu_bf16", "wrong_dtype"), "fail"),
    "linear_relu": (os.path.join(CORPUS, "inplace_weight_transpose"), "cheat"),
}
FAILING_TASK = "transpose_add"  # the endpoint answers 500 for it: an episode that could not be played


def read(path):
    with open(path) as f:
        return f.read()


class CandidateChat(StandInChat):
    """Writes the stored candidate of the task its prompt names, then submits, every time after."""
    table = GPU_CANDIDATES

    def answer(self, body):
        prompt = next(m["content"] for m in body["messages"] if m["role"] == "user")
        task = max((t for t in list(self.table) + [FAILING_TASK] if t in prompt), key=len)
        if task == FAILING_TASK:
            raise RuntimeError("scripted failure")
        if any(m["role"] == "assistant" for m in body["messages"]):
            return {"role": "assistant", "content": None, "tool_calls": [tool_call(3, "submit")]}
        d = self.table[task][0]
        return {"role": "assistant", "content": None, "tool_calls": [
            tool_call(1, "write_file", path="kernel.cu", content=read(os.path.join(d, "kernel.cu"))),
            tool_call(2, "write_file", path="launch.yaml", content=read(os.path.join(d, "launch.yaml")))]}

    def do_POST(self):
        try:
            super().do_POST()
        except RuntimeError:
            self.send_response(500)
            self.send_header("Content-Length", "0")
            self.end_headers()


def evaluate(server, tmp_path, tasks, *extra, chat=CandidateChat):
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), chat)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    env = client_env()
    out, report = tmp_path / "results.jsonl", tmp_path / "report"
    try:
        r = subprocess.run([sys.executable, "-m", "kforge_client.evaluate", "--server", server.endpoint,
                            "--chat-url", f"http://127.0.0.1:{httpd.server_address[1]}/v1", "--model", "scripted",
                            "--tasks", ",".join(tasks), "--max-turns", "4", "--concurrency", "2",
                            "--out", str(out), "--report", str(report), *extra],
                           capture_output=True, text=True, env=env, timeout=1000)
    finally:
        httpd.shutdown()
    assert r.returncode == 0, r.stdout + r.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    return r, rows, json.loads((report / "report.json").read_text()), (report / "report.md").read_text(), report


def sample_tolerance(task):
    """The tolerance the sample's YAML gives."""
    import yaml
    with open(os.path.join(SOURCE_DIR, "datasets", "samples", f"{task}.yaml")) as f:
        return yaml.safe_load(f)["tolerance"]


def test_without_a_gpu_the_report_counts_every_episode_unjudged(tmp_path):
    server = Server(tmp_path, record=False)
    try:
        tasks = list(GPU_CANDIDATES) + [FAILING_TASK]
        r, rows, doc, md, folder = evaluate(server, tmp_path, tasks, "--allow-no-gpu", "--seeds", "0,1")
        with Client(server.endpoint) as c:
            version = c.health()["version"]
            listed = {t["name"]: t for t in c.tasks(source="samples", limit=100)["tasks"]}
    finally:
        server.stop()
    played = [x for x in rows if "error" not in x]
    assert len(played) == 8 and len(rows) == 10
    assert all("ChatEndpointError" in x["error"] and ": HTTP 500: " in x["error"] for x in rows if "error" in x)
    for x in played:
        tol, meta, t = sample_tolerance(x["task"]), x["task_meta"], listed[x["task"]]
        assert meta["tolerance"] == {"atol": tol["atol"], "rtol": tol["rtol"]}, x
        assert {k: meta[k] for k in ("split", "source", "dtype", "n_ops", "eager_ms", "compile_ms")} == \
            {k: t[k] for k in ("split", "source", "dtype", "n_ops", "eager_ms", "compile_ms")}, (meta, t)
        assert meta["source"] == "samples" and meta["dtype"] in ("float32", "bfloat16")
        assert x["server"] == {"version": version, "gpus": [], "left_out": []} and x["no_gpu"] and "device" not in x["judge"]
    run = doc["runs"][0]
    assert (run["episodes"], run["judged"], run["unjudged"], run["errors"], run["tasks"]) == (8, 0, 8, 2, 4)
    assert all(m["value"] is None for m in run["overall"]["metrics"].values())
    assert all(not groups for groups in run["groups"].values())
    env = run["environment"]
    assert env["devices"] == [] and env["server_gpus"] == [] and env["kforge_versions"] == [version]
    assert {(t["dtype"], t["atol"], t["episodes"]) for t in env["tolerances"]} == {("float32", 1e-4, 6), ("bfloat16", 1e-2, 2)}
    assert env["tolerance_profile"] == "default"
    assert "NOTHING COULD BE JUDGED" in md and "GPU: none recorded" in md and f"kforge server version: {version}" in md
    assert "tolerance profile: default" in md and "could not be played (endpoint or server errors): 2" in md
    assert sorted(os.listdir(folder)) == ["fast_p_results_scripted.png", "report.json", "report.md", "speedups_results_scripted.png"]
    assert "wrote the report into" in r.stderr


def gpu_missing():
    smi = shutil.which("nvidia-smi")
    if not smi:
        return "no nvidia-smi: no CUDA device to judge the candidates on"
    listed = subprocess.run([smi, "-L"], capture_output=True, text=True)
    return "" if listed.returncode == 0 and "GPU" in listed.stdout else "nvidia-smi lists no GPU"


def test_gpu_report_numbers_are_what_the_stored_candidates_deserve(tmp_path):
    why = gpu_missing()
    if why:
        print(f"KFORGE_SKIPPED: {why}")
        pytest.skip(why)
    server = Server(tmp_path, record=False, scheduler={"gpus": -1})
    try:
        assert Client(server.endpoint).health()["gpus"], "a GPU is visible but the server has no GPU lane"
        _, rows, doc, md, _ = evaluate(server, tmp_path, list(GPU_CANDIDATES))
    finally:
        server.stop()
    by_task = {x["task"]: x for x in rows}
    for task, (_, verdict) in GPU_CANDIDATES.items():
        assert by_task[task]["reward"]["verdict"] == verdict, (task, by_task[task]["reward"])
    run = doc["runs"][0]
    assert (run["episodes"], run["judged"], run["unjudged"], run["errors"]) == (4, 4, 0, 0)
    assert run["verdicts"] == {"pass": 2, "fail": 1, "cheat": 1}
    v = {k: m["value"] for k, m in run["overall"]["metrics"].items()}
    speedups = [by_task[t]["reward"]["eager"]["speedup"]["point"] for t in ("gelu_scale_residual", "logsumexp_sub")]
    assert all(s > 1.3 for s in speedups), speedups  # both beat eager clearly (expect.yaml)
    assert v["pass_rate"] == v["fast_0"] == v["fast_0.5"] == v["fast_1"] == 0.5 and v["cheat_rate"] == 0.25
    assert v["faster_than_eager_rate"] == 0.5
    for p in (1.5, 2.0):
        assert v[f"fast_{p:g}"] == sum(s > p for s in speedups) / 4
    assert abs(v["geomean_speedup_eager_correct"] - math.sqrt(speedups[0] * speedups[1])) < 1e-9
    assert abs(v["geomean_speedup_eager"] - (speedups[0] * speedups[1]) ** 0.25) < 1e-9
    judged = by_task["gelu_scale_residual"]["judge"]
    assert judged["speedup_eager"] == speedups[0] and judged["device"]["name"] and judged["timing_method"]
    d = judged["device"]
    # The Markdown escapes markup characters (the method text holds some), as esc() does.
    assert f"GPU: {esc(d['name'])} (driver API {esc(d['driver_api'])}, CUDA {esc(d['cuda'])}, torch {esc(d['torch'])})" in md
    assert f"timing method: {esc(judged['timing_method'])}" in md

