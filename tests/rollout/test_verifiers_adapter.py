"""The verifiers adapter (kforge_client.adapters.verifiers_env) against the real verifiers package
(PyPI, 0.3.1) and a real `kforge serve` without a GPU: rollouts through verifiers' own OpenAI client
against a scripted OpenAI-compatible endpoint, the server's prompt and tools, tool and text turns,
kforge's end of the episode, the rubric's reward and evidence, many rollouts at once, a server
restart mid-rollout, load_environment over a split, the shipped example, and the import error without
verifiers."""
import asyncio
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from adapter_fixtures import SOURCE_DIR, Server, candidate, start_chat, tool_message  # noqa: E402
from client_harness import client_env  # noqa: E402

from kforge_client import Client, read_trajectories  # noqa: E402

verifiers_env = pytest.importorskip("kforge_client.adapters.verifiers_env",
                                    reason="verifiers is not installed (tools/setup.sh installs it)")
import verifiers as vf  # noqa: E402
from verifiers.types import ClientConfig  # noqa: E402

ENV_ID = "kforge_client.adapters.verifiers_env"


@pytest.fixture
def chat_client(monkeypatch):
    monkeypatch.setenv("KFORGE_TEST_KEY", "unused")

    def make(url):
        return ClientConfig(api_base_url=url, api_key_var="KFORGE_TEST_KEY", max_retries=0, timeout=60)
    return make


def rollout(env, client, row):
    return asyncio.run(env.run_rollout(row, client, "scripted", {}, state_columns=["kforge"]))


def role(m):
    return m["role"] if isinstance(m, dict) else m.role


def test_a_rollout_plays_one_episode_and_the_rubric_gives_its_reward(server, chat_client):
    script = [
        {"role": "assistant", "content": None, "tool_calls": [
            tool_message(1, "write_file", {"path": "kernel.cu", "content": candidate("kernel.cu")})["tool_calls"][0],
            tool_message(2, "write_file", {"path": "launch.yaml", "content": candidate("launch.yaml")})["tool_calls"][0]]},
        tool_message(3, "compile", {}),
        {"role": "assistant", "content": "It compiles. Let me think about the launch."},
        {"role": "assistant", "content": 'Verify.\n<tool_call>{"name": "verify", "arguments": {}}</tool_call>'},
    ]
    url, httpd = start_chat({"gelu_scale_residual": script})
    try:
        env = vf.load_environment(ENV_ID, endpoint=server.endpoint, tasks=["gelu_scale_residual"], seeds=[4], max_turns=5)
        out = rollout(env, chat_client(url), env.get_dataset()[0])
    finally:
        httpd.shutdown()
    from adapter_fixtures import ScriptedChat
    first = ScriptedChat.requests[0]
    last = first["messages"][-1]["content"]
    assert "gelu_scale_residual" in last and "put in place when the rollout starts" not in last
    assert {t["function"]["name"] for t in first["tools"]} == {s["function"]["name"] for s in Client(server.endpoint).tools()}
    roles = [role(m) for m in out["completion"]]
    assert roles == ["assistant", "tool", "tool", "assistant", "tool", "assistant", "user", "assistant", "user"], roles
    contents = [m["content"] if isinstance(m, dict) else m.content for m in out["completion"]]
    assert contents[1].startswith("wrote kernel.cu") and contents[4].startswith("compile: ok"), contents[4]
    assert contents[6].startswith("error: "), contents[6]                       # a turn without a tool call is spent
    assert contents[8].startswith("verify: not run (no_gpu)"), contents[8]      # the Hermes call ran
    facts = out["kforge"]
    # kforge's max_turns (5 steps: two calls in the first message) ended it: no submission, -1.
    assert facts["done"] and facts["termination_reason"] == "max_turns" and facts["seed"] == 4
    assert facts["reward"]["rule"] == "no_submission" and [s["tool"] for s in facts["steps"]] == [
        "write_file", "write_file", "compile", None, "verify"]
    assert out["reward"] == -1.0 and out["stop_condition"] == "has_final_env_response"
    assert out["metrics"]["kforge_finished"] == 1.0 and out["metrics"]["kforge_turns"] == 5.0
    t = read_trajectories(server.record)[0]  # the cleanup closed it: recorded
    assert t["episode"] == facts["episode"] and len(t["turns"]) == 5


def test_kforges_max_turns_ends_a_rollout_of_one_call_per_turn_with_its_evidence(server, chat_client):
    script = [tool_message(i, "list_files", {}) for i in range(3)]
    url, httpd = start_chat({"softmax_rows": script})
    try:
        env = verifiers_env.load_environment(endpoint=server.endpoint, tasks=["softmax_rows"], max_turns=3)
        out = rollout(env, chat_client(url), env.get_dataset()[0])
    finally:
        httpd.shutdown()
    facts = out["kforge"]  # the third turn was stepped: kforge ended the episode
    assert [s["tool"] for s in facts["steps"]] == ["list_files"] * 3
    assert facts["termination_reason"] == "max_turns" and facts["reward"]["rule"] == "no_submission"
    assert out["reward"] == -1.0 and out["metrics"]["kforge_finished"] == 1.0


def test_many_rollouts_at_once_each_with_its_episode_and_an_ended_episode_stops_the_rest(server, chat_client):
    # Every conversation submits an empty workspace, then would list files: the submit ends it (-1).
    script = [{"role": "assistant", "content": None, "tool_calls": [
        tool_message(1, "submit", {})["tool_calls"][0], tool_message(2, "list_files", {})["tool_calls"][0]]}]
    url, httpd = start_chat({"softmax_rows": script, "gelu_scale_residual": script})
    try:
        env = verifiers_env.load_environment(endpoint=server.endpoint, tasks="softmax_rows,gelu_scale_residual",
                                             seeds=range(6))
        rows = [env.get_dataset()[i] for i in range(12)]
        client = chat_client(url)

        async def main():
            return await asyncio.gather(*(env.run_rollout(r, client, "scripted", {}, state_columns=["kforge"]) for r in rows))

        outs = asyncio.run(main())
    finally:
        httpd.shutdown()
    assert sorted((o["kforge"]["task"], o["kforge"]["seed"]) for o in outs) == sorted(
        (t, s) for t in ("softmax_rows", "gelu_scale_residual") for s in range(6))
    for o in outs:
        assert o["reward"] == -1.0 and o["kforge"]["reward"]["rule"] == "compile_error"
        last = o["completion"][-1]
        assert (last["content"] if isinstance(last, dict) else last.content) == "not run: the kforge episode is over"
    assert len({o["kforge"]["episode"] for o in outs}) == 12
    assert Client(server.endpoint).health()["episodes"]["open"] == 0 and len(read_trajectories(server.record)) == 12


def test_a_server_restart_mid_rollout_loses_the_episode_and_scores_it_unfinished(tmp_path, chat_client):
    s = Server(tmp_path, endpoint="tcp://127.0.0.1:%d" % (22000 + os.getpid() % 20000))
    script = [tool_message(1, "list_files", {}), tool_message(2, "list_files", {})]
    url, httpd = start_chat({"softmax_rows": script}, before={("softmax_rows", 1): lambda: (s.kill(), s.start())})
    try:
        env = verifiers_env.load_environment(endpoint=s.endpoint, tasks=["softmax_rows"], timeout=5)
        out = rollout(env, chat_client(url), env.get_dataset()[0])
    finally:
        httpd.shutdown()
        s.stop()
    last = out["completion"][-1]
    assert (last["content"] if isinstance(last, dict) else last.content).startswith("error: the kforge episode was lost")
    assert out["kforge"]["lost"].startswith("unknown_episode") and out["reward"] == -1.0
    assert out["metrics"]["kforge_finished"] == 0.0


def test_load_environment_over_a_split_and_its_unfinished_reward(server):
    env = vf.load_environment(ENV_ID, endpoint=server.endpoint, split="heldout", unfinished_reward=-2)
    heldout = [t["name"] for t in Client(server.endpoint).tasks(split="heldout")["tasks"]]
    assert [r["info"]["kforge_task"] for r in env.get_dataset()] == heldout and heldout
    assert isinstance(env, vf.MultiTurnEnv) and env.unfinished_reward == -2.0
    with pytest.raises(ValueError, match="no tasks to play"):
        verifiers_env.load_environment(endpoint=server.endpoint, split="no_such_split")


def test_without_verifiers_the_import_says_how_to_install_it():
    code = ("import sys; sys.modules['verifiers'] = None\n"
            "import kforge_client.adapters as a\n"
            "try:\n    a.KforgeEnv\nexcept ImportError as e:\n    print(e)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       env=client_env())
    assert "needs verifiers" in r.stdout and "kforge-client[verifiers]" in r.stdout, r.stdout + r.stderr


def test_the_shipped_example_runs(server):
    script = [tool_message(0, "list_files", {})]  # then text turns, each spent, to kforge's max_turns
    url, httpd = start_chat({"softmax_rows": script, "gelu_scale_residual": script})
    try:
        r = subprocess.run([sys.executable, "tools/python/examples/verifiers_example.py"], cwd=SOURCE_DIR,
                           capture_output=True, text=True, timeout=300,
                           env=client_env(KFORGE_ENDPOINT=server.endpoint, CHAT_URL=url))
    finally:
        httpd.shutdown()
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "8 rollouts, mean reward -1.0" in r.stdout, r.stdout
    assert r.stdout.count("max_turns turns 8 rule no_submission") == 8, r.stdout
