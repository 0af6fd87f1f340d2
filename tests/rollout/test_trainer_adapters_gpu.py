"""On a GPU host (ctest label gpu): one whole episode per reward tier (-1, 1, 2, 3) through each
trainer adapter, the verl tool (verl's ToolAgentLoop call sequence, then compute_score) and the
verifiers environment (a rollout against a scripted chat endpoint, scored by its rubric), judged by
a real `kforge serve` with every visible GPU. The shipped scripted policies play them on copies of
their tasks whose stored baselines make each tier reachable (adapter_fixtures.TIERS). Skips, saying
why, where the server finds no GPU or a trainer package is missing."""
import asyncio
import json
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from adapter_fixtures import TIERS, chat_script, gpu_server, policy_calls, start_chat  # noqa: E402

RULES = {-1: "compile_error", 1: "correct", 2: "faster_than_eager", 3: "faster_than_both"}


def skip(why):
    print(f"KFORGE_SKIPPED: {why}")  # ctest's SKIP_REGULAR_EXPRESSION
    pytest.skip(why)


@pytest.fixture(scope="module")
def gpu(tmp_path_factory):
    s, names = gpu_server(tmp_path_factory.mktemp("gpu"))
    if s is None:
        skip(names)
    yield s, names
    s.stop()


@pytest.mark.parametrize("tier", sorted(TIERS))
def test_verl_tool_reaches_each_reward_tier(gpu, tier, monkeypatch):
    try:
        from kforge_client.adapters import verl_tool
        from verl.experimental.agent_loop.tool_agent_loop import AgentData, ToolAgentLoop
        from verl.experimental.agent_loop.tool_parser import FunctionCall
        from verl.tools.tool_registry import initialize_tools_from_config
    except ImportError as e:
        skip(f"verl is not installed ({e})")
    server, names = gpu
    monkeypatch.setenv("KFORGE_ENDPOINT", server.endpoint)
    from adapter_fixtures import SOURCE_DIR
    tools = initialize_tools_from_config(os.path.join(SOURCE_DIR, "tools", "python", "examples", "verl_tool_config.yaml"))
    loop = object.__new__(ToolAgentLoop)
    loop.tools = {t.name: t for t in tools}
    loop.max_tool_response_length, loop.tool_response_truncate_side = 100000, "middle"
    _, calls = policy_calls(TIERS[tier][0])
    create = {"create_kwargs": {"task": names[tier], "seed": 42}}
    data = AgentData(messages=[], image_data=None, video_data=None, audio_data=None, mm_processor_kwargs=None,
                     metrics={}, request_id=f"gpu-tier{tier}", tools_kwargs={t.name: create for t in tools})

    async def play():
        rewards = []
        for name, args in calls:
            response, reward, _ = await loop._call_tool(FunctionCall(name=name, arguments=json.dumps(args)),
                                                        data.tools_kwargs, data)
            print(f"[verl tier {tier}] {name} -> {(response.text or '')[:80]!r} reward {reward}")
            rewards.append(reward)
        return rewards, await verl_tool.compute_score(extra_info=dict(data.extra_fields))

    rewards, score = asyncio.run(play())
    facts = data.extra_fields["kforge"]
    assert facts["done"] and facts["termination_reason"] == "submitted", facts
    assert rewards[-1] == tier and score["score"] == tier, (score, facts["reward"])
    assert score["rule"] == RULES[tier], score


@pytest.mark.parametrize("tier", sorted(TIERS))
def test_verifiers_env_reaches_each_reward_tier(gpu, tier, monkeypatch):
    try:
        import verifiers as vf
        from verifiers.types import ClientConfig
    except ImportError as e:
        skip(f"verifiers is not installed ({e})")
    server, names = gpu
    _, calls = policy_calls(TIERS[tier][0])
    url, httpd = start_chat({names[tier]: chat_script(calls)})
    monkeypatch.setenv("KFORGE_TEST_KEY", "unused")
    try:
        env = vf.load_environment("kforge_client.adapters.verifiers_env", endpoint=server.endpoint,
                                  tasks=[names[tier]], seeds=[42])
        client = ClientConfig(api_base_url=url, api_key_var="KFORGE_TEST_KEY", max_retries=0, timeout=600)
        out = asyncio.run(env.run_rollout(env.get_dataset()[0], client, "scripted", {}, state_columns=["kforge"]))
    finally:
        httpd.shutdown()
    facts = out["kforge"]
    for step in facts["steps"]:
        print(f"[verifiers tier {tier}] {step}")
    assert facts["done"] and facts["termination_reason"] == "submitted", facts
    assert out["reward"] == tier and facts["reward"]["rule"] == RULES[tier], facts["reward"]
    assert out["metrics"]["kforge_finished"] == 1.0
    if tier > 0:
        assert out["metrics"]["kforge_speedup"] > 0
