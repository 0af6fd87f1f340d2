"""The evaluation side of the Python client against the real `kforge serve` binary, without a GPU:
the OpenAI-compatible evaluation loop (ChatEvaluator) against a scripted stand-in endpoint, the
`kforge-evaluate` command over a split, concurrent and resumed, its summary's counts and speedups,
and its refusal of a server without a GPU lane."""
import http.server
import json
import os
import subprocess
import sys
import threading

import pytest

from client_harness import SOURCE_DIR, Server, StandInChat, candidate, client_env, dead_endpoint
from kforge_client import Client, read_trajectories
from kforge_client.adapters import ChatEvaluator


class ScriptedChat(StandInChat):
    """Replays scripted assistant messages, records requests."""
    script = []
    requests = []

    def answer(self, body):
        ScriptedChat.requests.append(body)
        return ScriptedChat.script[len(ScriptedChat.requests) - 1]


def tool_call(i, name, **args):
    return {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def test_openai_evaluation_loop_against_a_scripted_endpoint(server):
    ScriptedChat.requests = []
    ScriptedChat.script = [
        {"role": "assistant", "content": None, "tool_calls": [
            tool_call(1, "write_file", path="kernel.cu", content=candidate("kernel.cu")),
            tool_call(2, "write_file", path="launch.yaml", content=candidate("launch.yaml"))]},
        {"role": "assistant", "content": None, "tool_calls": [tool_call(3, "compile")]},
        {"role": "assistant", "content": "Looks fine. Now I will think about it some more."},
        {"role": "assistant", "content": '<tool_call>{"name": "submit", "arguments": {}}</tool_call>'},
    ]
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), ScriptedChat)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        ev = ChatEvaluator(f"http://127.0.0.1:{httpd.server_address[1]}/v1", "stand-in", Client(server.endpoint))
        result = ev.run_episode("gelu_scale_residual", seed=1, options={"max_turns": 5})
    finally:
        httpd.shutdown()
    assert result.turns == 5 and result.termination_reason == "max_turns"
    assert result.episode_reward == -1  # no submission that counted: the no-GPU submit was a harness error
    first = ScriptedChat.requests[0]
    assert first["model"] == "stand-in" and {t["function"]["name"] for t in first["tools"]} >= {"compile"}
    third = ScriptedChat.requests[2]["messages"]
    tool_msgs = [m for m in third if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_msgs] == ["call_1", "call_2", "call_3"]
    assert tool_msgs[2]["content"].startswith("compile: ok")
    fourth = ScriptedChat.requests[3]["messages"]
    assert fourth[-1]["role"] == "user" and fourth[-1]["content"].startswith("error: ")
    t = read_trajectories(server.record)[0]
    assert [turn["info"]["tool"] for turn in t["turns"]] == ["write_file", "write_file", "compile", None, "submit"]


class SubmitChat(StandInChat):
    """For many concurrent episodes: every reply calls submit; records the models asked for."""
    lock = threading.Lock()
    models = []

    def answer(self, body):
        with SubmitChat.lock:
            SubmitChat.models.append(body["model"])
        return {"role": "assistant", "content": None, "tool_calls": [tool_call(1, "submit")]}


def test_evaluate_cli_plays_a_split_concurrently_and_resumes(server, tmp_path):
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), SubmitChat)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    out = tmp_path / "heldout.jsonl"
    env = client_env()

    def evaluate(*args):
        return subprocess.run([sys.executable, "-m", "kforge_client.evaluate", "--server", server.endpoint, "--chat-url", url,
                               "--out", str(out), "--max-turns", "2", "--concurrency", "2", "--allow-no-gpu", *args],
                              capture_output=True, text=True, env=env, timeout=300)

    try:
        heldout = [t["name"] for t in Client(server.endpoint).tasks(split="heldout")["tasks"]]
        assert heldout  # the samples have one
        r = evaluate("--model", "m1", "--seeds", "0,1,2", "--json")
        assert r.returncode == 0, r.stdout + r.stderr
        rows = [json.loads(line) for line in out.read_text().splitlines()]
        assert sorted((x["task"], x["seed"]) for x in rows) == sorted((t, s) for t in heldout for s in (0, 1, 2))
        # The stand-in submits an empty workspace at once: the episode ends with the compile_error reward.
        assert all(x["turns"] == 1 and x["termination_reason"] == "submitted" and x["episode_reward"] == -1
                   and x["reward"]["rule"] == "compile_error" and "error" not in x and x["no_gpu"] for x in rows), rows
        summary = json.loads(r.stdout)
        assert summary["episodes"] == 3 * len(heldout) and summary["errors"] == 0
        assert summary["unjudged"] == 3 * len(heldout) and "nothing will be judged" in r.stderr
        assert summary["termination"] == {"submitted": 3 * len(heldout)}
        assert summary["reward_rule"] == {"compile_error": 3 * len(heldout)} and summary["mean_reward"] == -1
        assert "3 episode(s) to play" in r.stderr and "episodes/min" in r.stderr

        # A rerun plays nothing; another model's episodes go in the same file, counted apart.
        again = evaluate("--model", "m1", "--seeds", "0,1,2")
        assert again.returncode == 0 and "0 episode(s) to play, 3 already in" in again.stderr, again.stderr
        assert f"NOTHING COULD BE JUDGED in {3 * len(heldout)} of them" in again.stdout, again.stdout
        assert len(out.read_text().splitlines()) == 3
        other = evaluate("--model", "m2", "--tasks", "linear_relu", "--seeds", "5", "--json")
        assert other.returncode == 0, other.stderr
        assert json.loads(other.stdout)["episodes"] == 1 and "m2" in SubmitChat.models

        # A server that is not there: the episode is written as an error line, and played again later.
        down = subprocess.run([sys.executable, "-m", "kforge_client.evaluate", "--server", server.endpoint, "--chat-url",
                               "http://127.0.0.1:9/v1", "--model", "m3", "--tasks", "linear_relu", "--max-turns", "2",
                               "--out", str(out), "--json", "--allow-no-gpu"], capture_output=True, text=True, env=env,
                              timeout=300)
        # Nothing of m3 was played to its end: a failed run, and the endpoint's error names its URL.
        assert down.returncode == 1, down.stderr
        assert json.loads(down.stdout)["errors"] == 1 and "kforge-evaluate: FAILED: no episode of m3" in down.stderr
        assert "error ChatEndpointError: http://127.0.0.1:9/v1/chat/completions: no reply" in down.stderr
        bad = evaluate("--model", "m1", "--split", "no_such_split")
        assert bad.returncode == 2 and "split no_such_split has none" in bad.stderr
    finally:
        httpd.shutdown()


def test_evaluate_summary_counts_and_speedups():
    from kforge_client.evaluate import summarize, summary_table

    def row(task, seed, reward, rule, eager=None, compile_beats=False, error=None):
        r = {"task": task, "seed": seed, "model": "m", "episode_reward": reward, "termination_reason": "submitted",
             "turns": 3, "reward": {"rule": rule}}
        if eager is not None:
            r["reward"]["eager"] = {"speedup": {"point": eager}, "beats": eager > 1.05}
            r["reward"]["torch_compile"] = {"beats": compile_beats}
        if error:
            r = {"task": task, "seed": seed, "model": "m", "error": error}
        return r

    rows = [row("a", 0, 0, "x", error="URLError: down"),       # played again below: not an error
            row("a", 0, 1.0, "faster_than_both", eager=2.0, compile_beats=True),
            row("b", 0, 0.5, "faster_than_eager", eager=1.5),
            row("c", 0, 0.1, "correct_not_faster", eager=0.5),
            row("d", 0, -1, "compile_error"),
            row("e", 0, 0, "x", error="ServerUnavailable: no reply")]
    s = summarize(rows)
    assert (s["episodes"], s["errors"], s["tasks"], s["timed_submissions"]) == (4, 1, 4, 3)
    assert s["mean_reward"] == (1.0 + 0.5 + 0.1 - 1) / 4 and s["positive_reward_share"] == 0.75
    assert s["beats_eager_share"] == 0.5 and s["beats_compile_share"] == 0.25
    assert s["speedup_over_eager_median"] == 1.5
    assert abs(s["speedup_over_eager_geomean"] - (2.0 * 1.5 * 0.5) ** (1 / 3)) < 1e-12
    text = summary_table(s)
    assert "episodes 4 over 4 task(s); 1 could not be played" in text and "3 timed submission(s)" in text


def test_evaluate_refuses_a_server_without_a_gpu_lane(server, tmp_path):
    env = client_env()
    out = tmp_path / "out.jsonl"
    r = subprocess.run([sys.executable, "-m", "kforge_client.evaluate", "--server", server.endpoint, "--chat-url",
                        "http://127.0.0.1:9/v1", "--model", "m", "--out", str(out)],
                       capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 2 and not out.exists(), r.stderr
    assert f"kforge-evaluate: the server at {server.endpoint} has no GPU lane" in r.stderr and "--allow-no-gpu" in r.stderr
    down = subprocess.run([sys.executable, "-m", "kforge_client.evaluate", "--server", dead_endpoint(), "--chat-url",
                           "http://127.0.0.1:9/v1", "--model", "m", "--out", str(out), "--connect-timeout", "1"],
                          capture_output=True, text=True, env=env, timeout=60)
    assert down.returncode == 2 and "kforge-evaluate: no kforge server answered health" in down.stderr, down.stderr
    assert "within 1 s" in down.stderr, down.stderr
    assert "Traceback" not in down.stderr
    usage = subprocess.run([sys.executable, "-m", "kforge_client.evaluate", "--help"], capture_output=True, text=True,
                           env=env, timeout=60)
    assert usage.returncode == 0 and usage.stdout.startswith("usage: kforge-evaluate "), usage.stdout
    assert "--allow-no-gpu" in usage.stdout and "python -m" not in usage.stdout.splitlines()[0]


def evaluate_cli(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "kforge_client.evaluate", *args], capture_output=True, text=True,
                          env=client_env(), timeout=timeout)


@pytest.mark.parametrize("args, message", [
    (("--tasks", ","), "--tasks takes task names separated by commas, not ','"),
    (("--tasks", ""), "--tasks takes task names separated by commas, not ''"),
    (("--tasks", "a,,b"), "--tasks takes task names"),
    (("--split", ""), "--split takes a split name"),
    (("--limit", "0"), "--limit must be >= 1, not 0"),
    (("--limit", "-3"), "--limit must be >= 1, not -3"),
    (("--seeds", ","), "--seeds takes integers"),
    (("--timeout", "0"), "--timeout must be > 0"),
    (("--chat-url", "file:///etc/passwd"), "must be http:// or https:// with a host, not 'file:///etc/passwd'"),
    (("--chat-url", "ftp://host/v1"), "must be http:// or https://"),
])
def test_evaluate_refuses_empty_or_invalid_flags_with_exit_2(tmp_path, args, message):
    out = tmp_path / "out.jsonl"
    flags = {"--server": "ipc:///nonexistent/kforge.sock", "--chat-url": "http://127.0.0.1:9/v1", "--model": "m",
             "--out": str(out)}
    flags.update(dict(zip(args[::2], args[1::2])))
    r = evaluate_cli(*[x for kv in flags.items() for x in kv])
    assert r.returncode == 2 and message in r.stderr and not out.exists(), r.stderr
    assert "Traceback" not in r.stderr


def test_evaluate_plays_train_tasks_only_when_named_and_says_what_it_plays(server, tmp_path):
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), SubmitChat)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    common = ["--server", server.endpoint, "--chat-url", f"http://127.0.0.1:{httpd.server_address[1]}/v1",
              "--model", "m", "--max-turns", "1", "--allow-no-gpu", "--json"]
    try:
        heldout = evaluate_cli(*common, "--out", str(tmp_path / "default.jsonl"))
        train = evaluate_cli(*common, "--split", "train", "--limit", "2", "--out", str(tmp_path / "train.jsonl"))
        unknown = evaluate_cli(*common, "--tasks", "linear_relu,no_such_task", "--out", str(tmp_path / "u.jsonl"))
    finally:
        httpd.shutdown()
    assert heldout.returncode == 0, heldout.stderr
    rows = [json.loads(x) for x in (tmp_path / "default.jsonl").read_text().splitlines()]
    assert rows and {r["task_meta"]["split"] for r in rows} == {"heldout"}, rows
    assert f"evaluate: playing split heldout: {len(rows)} task(s) x 1 seed(s)" in heldout.stderr, heldout.stderr
    assert train.returncode == 0, train.stderr
    rows = [json.loads(x) for x in (tmp_path / "train.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and {r["task_meta"]["split"] for r in rows} == {"train"}
    assert "evaluate: playing split train: 2 task(s) (--limit 2) x 1 seed(s)" in train.stderr, train.stderr
    assert unknown.returncode == 2 and "the server serves no task named no_such_task" in unknown.stderr
    assert not (tmp_path / "u.jsonl").exists()


class BigWriteChat(StandInChat):
    """Writes a file larger than the server's payload limit: the server answers the step with an error."""

    def answer(self, body):
        return {"role": "assistant", "content": None,
                "tool_calls": [tool_call(1, "write_file", path="kernel.cu", content="//" + "x" * 4000)]}


def test_an_episode_a_step_error_ended_is_counted_as_a_failure(tmp_path):
    server = Server(tmp_path, protocol={"max_payload_bytes": 1024})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), BigWriteChat)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    out = tmp_path / "out.jsonl"
    try:
        r = evaluate_cli("--server", server.endpoint, "--chat-url", f"http://127.0.0.1:{httpd.server_address[1]}/v1",
                         "--model", "m", "--tasks", "linear_relu,softmax_rows", "--allow-no-gpu", "--json",
                         "--out", str(out))
    finally:
        httpd.shutdown()
        server.stop()
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(rows) == 2 and all("error" not in x for x in rows), rows
    assert all(x["termination_reason"] == "step_error" and x["episode_reward"] is None and x["turns"] == 0
               and x["step_error"].startswith("payload_too_large") for x in rows), rows
    summary = json.loads(r.stdout)
    assert (summary["episodes"], summary["step_errors"], summary["errors"], summary["judged"]) == (2, 2, 0, 0)
    assert summary["positive_reward_share"] == 0 and summary["mean_reward"] is None
    assert r.returncode == 1 and "FAILED: no episode of m" in r.stderr and "2 ended by a step's error reply" in r.stderr
    from kforge_client.report.rows import Run
    on_gpu = Run("r", [{k: v for k, v in x.items() if k != "no_gpu"} for x in rows])  # as a GPU server's run
    assert len(on_gpu.judged) == 2 and not any(e["correct"] for e in on_gpu.judged)  # the report: two failures


class BrokenChat(http.server.BaseHTTPRequestHandler):
    """An endpoint that answers HTML: a proxy's error page (502), or a login page with status 200."""

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        status = 502 if "bad-gateway" in self.path else 200
        data = b"<html><head><title>Sign in</title></head><body>" + b"proxy says no " * 50 + b"</body></html>"
        self.send_response(status)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def test_endpoint_errors_name_the_url_status_and_body():
    from kforge_client.adapters import ChatEndpointError
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), BrokenChat)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{httpd.server_address[1]}"
    try:
        errors = []
        for path in ("/bad-gateway/v1", "/login/v1"):
            ev = ChatEvaluator(base + path, "m", Client(dead_endpoint(), timeout=1))
            with pytest.raises(ChatEndpointError) as e:
                ev._chat([{"role": "user", "content": "hi"}], [])
            errors.append(e.value)
    finally:
        httpd.shutdown()
    gateway, login = errors
    assert gateway.status == 502 and str(gateway).startswith(f"{base}/bad-gateway/v1/chat/completions: HTTP 502: ")
    assert "<title>Sign in</title>" in str(gateway) and len(str(gateway)) < 500
    assert login.status == 200 and "is not an OpenAI chat completion" in str(login) and "Sign in" in str(login)
    with pytest.raises(ValueError, match="http:// or https://"):
        ChatEvaluator("file:///etc/passwd", "m", None)


class KillingChat(StandInChat):
    """Kills the kforge server, then answers a tool call: the step gets no reply."""
    server = None

    def answer(self, body):
        KillingChat.server.kill()
        return {"role": "assistant", "content": None, "tool_calls": [tool_call(1, "compile")]}


def test_the_client_timeout_flag_bounds_an_episode_against_a_dead_server(tmp_path):
    KillingChat.server = server = Server(tmp_path)
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), KillingChat)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    out = tmp_path / "out.jsonl"
    try:
        r = evaluate_cli("--server", server.endpoint, "--chat-url", f"http://127.0.0.1:{httpd.server_address[1]}/v1",
                         "--model", "m", "--tasks", "linear_relu", "--allow-no-gpu", "--timeout", "1",
                         "--out", str(out), timeout=60)
    finally:
        httpd.shutdown()
        server.stop()
    row = json.loads(out.read_text())
    assert row["error"].startswith("ServerUnavailable") and row["seconds"] < 8, row  # 120 s + 120 s without the flag
    assert r.returncode == 1, r.stderr


def test_evaluate_replays_stored_candidates_as_the_policy(server, tmp_path):
    """--replay DIR: each task's stored files are written and submitted in one turn (an extra file
    such as expect.yaml is no part of the candidate); a task without a folder submits nothing; the
    recording holds exactly the stored files."""
    import shutil
    stored = tmp_path / "stored"
    shutil.copytree(os.path.join(SOURCE_DIR, "datasets", "samples", "candidates", "linear_relu", "tiled"), stored / "linear_relu")
    (stored / "linear_relu" / "expect.yaml").write_text("verdict: pass\n")
    out = tmp_path / "stored.jsonl"
    r = evaluate_cli("--server", server.endpoint, "--replay", str(stored), "--model", "stored", "--tasks",
                     "linear_relu,softmax_rows", "--out", str(out), "--allow-no-gpu", "--json", "--max-turns", "4",
                     timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = {x["task"]: x for x in map(json.loads, out.read_text().splitlines())}
    files = sorted(p.name for p in (stored / "linear_relu").iterdir() if p.name != "expect.yaml")
    # Nothing stored: the empty workspace is submitted and ends the episode (compile_error). With no
    # GPU lane the candidate's submit answers no_gpu and the episode goes on: a submit every turn after.
    assert rows["softmax_rows"]["turns"] == 1 and rows["softmax_rows"]["reward"]["rule"] == "compile_error", rows
    assert rows["softmax_rows"]["termination_reason"] == "submitted"
    assert rows["linear_relu"]["turns"] == 4 and all(x["model"] == "stored" and "error" not in x for x in rows.values())
    written, tools = {}, {}
    for t in read_trajectories(server.record):
        tools[t["task"]] = [turn["info"]["tool"] for turn in t["turns"]]
        for turn in t["turns"]:
            if turn["info"]["tool"] == "write_file":
                args = json.loads(turn["action"]["function"]["arguments"])  # the OpenAI tool call, as sent
                written[(t["task"], args["path"])] = args["content"]
    assert written == {("linear_relu", f): (stored / "linear_relu" / f).read_text() for f in files}
    assert tools["linear_relu"] == ["write_file"] * len(files) + ["submit"] * (4 - len(files)), tools
    # A stored file that is a link is refused: the episode is an error line, played again by a rerun.
    (stored / "softmax_rows").mkdir()
    os.symlink("/etc/hostname", stored / "softmax_rows" / "kernel.cu")
    again = evaluate_cli("--server", server.endpoint, "--replay", str(stored), "--model", "linked", "--tasks",
                         "softmax_rows", "--out", str(out), "--allow-no-gpu", "--json", timeout=300)
    assert again.returncode == 1 and "not a regular file" in again.stderr, again.stderr


@pytest.mark.parametrize("args, message", [
    (("--replay", "/nonexistent/stored"), "--replay /nonexistent/stored: not a folder"),
    (("--replay", ".", "--chat-url", "http://127.0.0.1:9/v1"), "not allowed with argument"),
    ((), "one of the arguments --chat-url --replay is required"),
])
def test_evaluate_takes_exactly_one_policy(tmp_path, args, message):
    out = tmp_path / "out.jsonl"
    r = evaluate_cli("--server", "ipc:///nonexistent/kforge.sock", "--model", "m", "--out", str(out), *args)
    assert r.returncode == 2 and message in r.stderr and not out.exists(), r.stderr


def test_a_stored_candidate_is_its_files_nested_folders_included(tmp_path):
    """A CUDA Agent workdir keeps its files under kernels/: they are written at their relative paths;
    expect.yaml, README.md and hidden files are no part of a candidate; a file over 1 MiB is refused."""
    from kforge_client.adapters.replay_eval import candidate_files
    d = tmp_path / "linear_relu"
    (d / "kernels").mkdir(parents=True)
    (d / "kernels" / "linear_relu.cu").write_text("// device\n")
    (d / "kernels" / "linear_relu_binding.cpp").write_text("// binding\n")
    (d / "model_new.py").write_text("# glue\n")
    for skipped in ("expect.yaml", "README.md", ".notes"):
        (d / skipped).write_text("x")
    assert candidate_files(str(d)) == {"kernels/linear_relu.cu": "// device\n", "kernels/linear_relu_binding.cpp": "// binding\n",
                                       "model_new.py": "# glue\n"}
    assert candidate_files(str(tmp_path / "absent")) == {}
    (d / "kernels" / "big.cu").write_text("x" * ((1 << 20) + 1))
    with pytest.raises(ValueError, match="big.cu: over 1048576 bytes"):
        candidate_files(str(d))
