"""Issue 26: the real `kforge serve` survives a policy that sends every input that once crashed it
(launch-plan grids that overflow or divide by zero, 20 000 parentheses or terms, 150 000 nested
brackets in Hermes text and in an OpenAI arguments string, 1e999, workspace paths that escape,
a 10 MB kernel, Hermes inside <think>) while 50 other episodes compile, end and are recorded.

The symlinked kernel.cu of the issue cannot be sent over the protocol (the workspace lives in the
server's memory, its files are only what write_file wrote): the path escapes stand in for it here;
`kforge eval --check` on a symlink is tests/tools' (python.cli_untrusted_input)."""
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from client_harness import Server, call, candidate, write
from kforge_client import Client, read_trajectories

GOOD_EPISODES = 50
TASK = "gelu_scale_residual"


def plan(grid):
    return ("launches:\n  - kernel: gelu_scale_residual\n"
            f"    grid: [\"{grid}\"]\n    block: [256]\n    args: [x, out, B * D]\n")


def hermes(arguments_text):
    return f'<tool_call>{{"name": "write_file", "arguments": {arguments_text}}}</tool_call>'


def openai(arguments_text):
    return {"type": "function", "function": {"name": "write_file", "arguments": arguments_text}}


def crash_inputs():
    """(what, [actions]) in the order the hostile policy sends them."""
    deep = "[" * 150_000 + "]" * 150_000
    return [
        ("INT64_MIN / -1 grid, then compile", [write("launch.yaml", plan("(0 - 9223372036854775807 - 1) / (0 - 1)")), call("compile")]),
        ("% (0-1) grid, then compile", [write("launch.yaml", plan("(B * D) % (0-1)")), call("compile")]),
        ("20 000 parentheses", [write("launch.yaml", plan("(" * 20_000 + "1" + ")" * 20_000)), call("compile")]),
        ("20 000-term sum", [write("launch.yaml", plan(" + ".join(["1"] * 20_000))), call("compile")]),
        ("150 000 '[' in Hermes text", [hermes(deep)]),
        ("150 000 '[' in an OpenAI arguments string", [openai(deep)]),
        ("1e999 in Hermes text", [hermes('{"path": "a.cu", "content": 1e999}')]),
        ("1e999 in an OpenAI arguments string", [openai('{"path": "a.cu", "content": 1e999}')]),
        ("paths out of the workspace", [call("read_file", path="/etc/passwd"), call("read_file", path="../../../../etc/passwd"),
                                        write("../kernel.cu", "x"), write("/etc/kforge-was-here", "x")]),
        ("a 10 MB kernel, then compile", [write("kernel.cu", "// " + "x" * (10 << 20) + "\n"), call("compile")]),
        ("Hermes inside <think>", ['<think><tool_call>{"name": "write_file", "arguments": {"path": "think.cu", '
                                   '"content": "pwned"}}</tool_call></think>', call("list_files")]),
    ]


def hostile_policy(endpoint, report):
    c = Client(endpoint, timeout=120)
    ep = c.reset(TASK, options={"max_turns": 100})["episode"]
    c.step(ep, write("kernel.cu", candidate("kernel.cu")))  # so that compile reaches the launch plans
    for what, actions in crash_inputs():
        for action in actions:
            started = time.monotonic()
            r = c.step(ep, action)  # an exception (a dropped connection, a timeout) fails the test
            report.append((what, r["observation"][:300], time.monotonic() - started))
    report.append(("listing", c.step(ep, call("list_files"))["observation"], 0.0))
    c.close_episode(ep)


def good_episode(endpoint, i):
    c = Client(endpoint, timeout=120)
    try:
        ep = c.reset(TASK, seed=i)["episode"]
        c.step(ep, write("kernel.cu", candidate("kernel.cu")))
        c.step(ep, write("launch.yaml", candidate("launch.yaml")))
        compiled = c.step(ep, call("compile"))
        c.close_episode(ep)
        return ep, compiled["info"].get("tool_ok")
    finally:
        c.close()


def test_the_server_survives_every_crash_input_while_50_episodes_finish_and_are_recorded(tmp_path):
    s = Server(tmp_path, scheduler={"compile_workers": 2})
    try:
        report = []
        hostile = threading.Thread(target=hostile_policy, args=(s.endpoint, report))
        hostile.start()
        with ThreadPoolExecutor(10) as pool:
            good = list(pool.map(lambda i: good_episode(s.endpoint, i), range(GOOD_EPISODES)))
        hostile.join(300)
        assert not hostile.is_alive()
        assert s.proc.poll() is None, open(tmp_path / "serve.log").read()[-2000:]
        whats = [w for w, _, _ in report]
        assert all(w in whats for w, _ in crash_inputs()), report  # every input was answered
        slow = [(w, round(t, 1)) for w, o, t in report if t > 5 and not o.startswith("compile")]
        assert not slow, slow  # and promptly (a 10 MB kernel once took 7.5 s and 2.5 GB)
        compiles = [o for _, o, _ in report if o.startswith("compile")]
        assert len(compiles) == 5 and all("compile_error" in o and "launch.yaml" in o for o in compiles), compiles
        assert "think.cu" not in report[-1][1] and "kforge-was-here" not in report[-1][1], report[-1]
        assert all(ok for _, ok in good), good  # the good candidate compiled in every episode
        health = Client(s.endpoint).health()
        assert health["record"]["failed"] == 0 and health["record"]["unwritten"] == 0, health["record"]
    finally:
        s.stop()
    recorded = {t["episode"]: t for t in read_trajectories(s.record)}
    assert len(recorded) == GOOD_EPISODES + 1
    for ep, _ in good:
        assert [t["info"]["tool"] for t in recorded[ep]["turns"]] == ["write_file", "write_file", "compile"]
        assert recorded[ep]["end_cause"] == "closed"
