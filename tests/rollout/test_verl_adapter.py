"""The verl adapter (kforge_client.adapters.verl_tool) against the real verl package (PyPI, 0.9.1)
and a real `kforge serve` without a GPU: the shipped tool config loaded by verl's own loader, verl's
ToolAgentLoop call sequence (create -> execute(agent_data) -> release per call) playing one kforge
episode per trajectory, concurrent trajectories, the reward function closing the episode, the
direct lifecycle keyed by instance id, a server restart, busy, dataset rows, the shipped example, the
import error without verl, and verl's whole ToolAgentLoop.run with a scripted model: its response_mask."""
import asyncio
import os
import subprocess
import sys

import pytest
import yaml

sys.path.insert(0, os.path.dirname(__file__))
from adapter_fixtures import SOURCE_DIR, Server, candidate  # noqa: E402
from client_harness import client_env  # noqa: E402

from kforge_client import Client, read_trajectories  # noqa: E402

verl_tool = pytest.importorskip("kforge_client.adapters.verl_tool", reason="verl is not installed (tools/setup.sh installs it)")
from verl.experimental.agent_loop.tool_agent_loop import AgentData, ToolAgentLoop  # noqa: E402
from verl.experimental.agent_loop.tool_parser import FunctionCall  # noqa: E402
from verl.tools.tool_registry import initialize_tools_from_config  # noqa: E402

TOOL_CONFIG = os.path.join(SOURCE_DIR, "tools", "python", "examples", "verl_tool_config.yaml")


@pytest.fixture
def tools(server, monkeypatch):
    """The shipped tool config, loaded by verl's loader with the test server's endpoint."""
    monkeypatch.setenv("KFORGE_ENDPOINT", server.endpoint)
    return initialize_tools_from_config(TOOL_CONFIG)


def agent_loop(tools):
    """verl's ToolAgentLoop with only what its _call_tool reads (the rest needs a model and Ray)."""
    loop = object.__new__(ToolAgentLoop)
    loop.tools = {t.name: t for t in tools}
    loop.max_tool_response_length = 100000
    loop.tool_response_truncate_side = "middle"
    return loop


def trajectory(request_id, task, seed, names):
    """verl's AgentData of one trajectory, with the dataset row's tools_kwargs (verl_rows' shape)."""
    create = {"create_kwargs": {"task": task, "seed": seed}}
    return AgentData(messages=[], image_data=None, video_data=None, audio_data=None, mm_processor_kwargs=None,
                     metrics={}, request_id=request_id, tools_kwargs={n: create for n in names})


async def call(loop, data, name, **arguments):
    """One model tool call through verl's own ToolAgentLoop._call_tool: (text, reward)."""
    import json
    response, reward, _ = await loop._call_tool(FunctionCall(name=name, arguments=json.dumps(arguments)),
                                                data.tools_kwargs, data)
    return response.text, reward


def test_the_shipped_tool_config_is_the_servers_tools_and_verls_loader_builds_them(server, tools):
    served = Client(server.endpoint).tools()
    assert [t.name for t in tools] == [s["function"]["name"] for s in served]
    assert all(type(t).__name__ == "KforgeTool" and t.endpoint == server.endpoint for t in tools)
    with open(TOOL_CONFIG) as f:
        assert [e["tool_schema"] for e in yaml.safe_load(f)["tools"]] == served  # the file cannot drift
    write = tools[0].get_openai_tool_schema().function
    assert write.parameters.required == ["path", "content"] and set(write.parameters.properties) == {"path", "content"}
    with pytest.raises(ValueError, match=r"unknown key\(s\) \['endpont'\]"):
        verl_tool.KforgeTool({"type": "native", "endpont": "x"}, tools[0].tool_schema)


def test_tool_agent_loop_plays_one_episode_per_trajectory_and_the_reward_function_closes_it(server, tools):
    names = [t.name for t in tools]
    loop = agent_loop(tools)

    async def main():
        a = trajectory("traj-a", "gelu_scale_residual", 5, names)
        b = trajectory("traj-b", "softmax_rows", 6, names)
        text, _ = await call(loop, a, "write_file", path="kernel.cu", content=candidate("kernel.cu"))
        assert text.startswith("wrote kernel.cu")
        text, _ = await call(loop, b, "list_files")   # another trajectory: its own, empty workspace
        assert "kernel.cu" not in text
        await call(loop, a, "write_file", path="launch.yaml", content=candidate("launch.yaml"))
        text, _ = await call(loop, a, "compile")
        assert text.startswith("compile: ok"), text
        text, _ = await call(loop, a, "verify")
        assert text.startswith("verify: not run (no_gpu)"), text
        facts = a.extra_fields["kforge"]
        assert facts["turn"] == 4 and not facts["done"] and facts["task"] == "gelu_scale_residual" and facts["seed"] == 5
        text, reward = await call(loop, b, "submit")  # nothing written: a compile error, the episode ends
        assert reward == -1 and b.extra_fields["kforge"]["done"]
        assert b.extra_fields["kforge"]["reward"]["rule"] == "compile_error"
        text, reward = await call(loop, b, "list_files")
        assert text.startswith("error: the kforge episode is over (submitted)") and reward == 0
        assert verl_tool._INSTANCES == {}  # verl released every per-call instance
        # full_determinism: the next training step's trajectory has the same request_id ("det-<index>"),
        # and is another trajectory all the same, with its own episode
        again = trajectory("traj-b", "softmax_rows", 6, names)
        text, _ = await call(loop, again, "list_files")
        assert not text.startswith("error") and again.extra_fields["kforge"]["episode"] != b.extra_fields["kforge"]["episode"]
        await verl_tool.compute_score(extra_info=dict(again.extra_fields))
        open_before = (await verl_tool._client(server.endpoint, 30, 10).health())["episodes"]["open"]
        score_a = await verl_tool.compute_score(extra_info=dict(a.extra_fields))
        score_b = await verl_tool.compute_score(extra_info=dict(b.extra_fields))
        return open_before, score_a, score_b

    open_before, score_a, score_b = asyncio.run(main())
    assert open_before == 2  # one episode per trajectory, however many instances verl made
    assert score_a == {"score": -1.0, "rule": "unfinished", "termination_reason": None, "turns": 4, "speedup": None,
                       "lost": None}
    assert score_b["score"] == -1.0 and score_b["rule"] == "compile_error" and score_b["termination_reason"] == "submitted"
    assert Client(server.endpoint).health()["episodes"]["open"] == 0  # compute_score closed them
    played = sorted((t["task"], [x["info"]["tool"] for x in t["turns"]]) for t in read_trajectories(server.record))
    assert played == [("gelu_scale_residual", ["write_file", "write_file", "compile", "verify"]),
                      ("softmax_rows", ["list_files"]), ("softmax_rows", ["list_files", "submit"])]


def test_parallel_calls_of_one_trajectory_run_in_order_and_many_trajectories_at_once(server, tools):
    names = [t.name for t in tools]
    loop = agent_loop(tools)

    async def one(i):
        data = trajectory(f"t{i}", "softmax_rows", i, names)
        texts = await asyncio.gather(*(call(loop, data, "write_file", path=f"n{k}.md", content=str(k)) for k in range(3)))
        listing, _ = await call(loop, data, "list_files")
        return [t for t, _ in texts], listing, data.extra_fields["kforge"]["turn"]

    async def main():
        return await asyncio.gather(*(one(i) for i in range(16)))

    for texts, listing, turn in asyncio.run(main()):
        assert [t.split()[0:2] for t in texts] == [["wrote", f"n{k}.md"] for k in range(3)]  # no episode_busy
        assert turn == 4 and all(f"n{k}.md" in listing for k in range(3))


def test_direct_lifecycle_keys_the_episode_by_instance_id_and_release_closes_it(server, tools):
    by_name = {t.name: t for t in tools}

    async def main():
        iid, created = await by_name["write_file"].create(task="gelu_scale_residual", seed=2)
        assert created.is_empty()
        for name in ("kernel.cu", "launch.yaml"):
            await by_name["write_file"].execute(iid, {"path": name, "content": candidate(name)})
        response, reward, metrics = await by_name["compile"].execute(iid, {})
        assert response.text.startswith("compile: ok") and reward == 0 and metrics["turn"] == 3
        assert metrics["tool"] == "compile" and metrics["verdict"] == "checked" and metrics["latency_s"] > 0
        assert "gelu_scale_residual" in verl_tool.episode_facts(iid)["prompt"]
        assert await by_name["compile"].calc_reward(iid) == 0.0
        await by_name["submit"].release(iid)
        return (await verl_tool._client(server.endpoint, 30, 10).health())["episodes"]["open"]

    assert asyncio.run(main()) == 0
    assert [x["info"]["tool"] for x in read_trajectories(server.record)[0]["turns"]] == ["write_file", "write_file", "compile"]


def test_a_server_restart_loses_the_episode_and_the_reward_says_so(tmp_path, monkeypatch):
    s = Server(tmp_path, endpoint="tcp://127.0.0.1:%d" % (21000 + os.getpid() % 20000))
    monkeypatch.setenv("KFORGE_ENDPOINT", s.endpoint)
    tools = {t.name: t for t in initialize_tools_from_config(TOOL_CONFIG)}
    for t in tools.values():
        t.timeout = 3.0
    loop = agent_loop(tools.values())
    try:
        async def main():
            data = trajectory("restart", "softmax_rows", 1, list(tools))
            await call(loop, data, "list_files")
            s.kill()
            s.start()  # same endpoint, a fresh server: the episode is unknown there
            text, reward = await call(loop, data, "list_files")
            again, _ = await call(loop, data, "list_files")
            return text, again, await verl_tool.compute_score(extra_info=dict(data.extra_fields))

        text, again, score = asyncio.run(main())
    finally:
        s.stop()
    assert text.startswith("error: the kforge episode was lost (unknown_episode"), text
    assert again.startswith("error: the kforge episode is lost"), again
    assert score["score"] == -1.0 and score["rule"] == "unfinished" and score["lost"].startswith("unknown_episode")


def test_busy_at_reset_costs_nothing_and_the_call_can_be_repeated(tmp_path, monkeypatch):
    s = Server(tmp_path, sessions={"max_episodes": 1})
    monkeypatch.setenv("KFORGE_ENDPOINT", s.endpoint)
    tools = initialize_tools_from_config(TOOL_CONFIG)
    for t in tools:
        t.busy_timeout = 0.3
    loop = agent_loop(tools)
    names = [t.name for t in tools]
    try:
        async def main():
            first, second = trajectory("one", "softmax_rows", 1, names), trajectory("two", "softmax_rows", 2, names)
            await call(loop, first, "list_files")
            busy, _ = await call(loop, second, "list_files")  # the one slot is taken
            await verl_tool.compute_score(extra_info=dict(first.extra_fields))  # frees it
            later, _ = await call(loop, second, "list_files")
            return busy, later, second.extra_fields["kforge"]

        busy, later, facts = asyncio.run(main())
    finally:
        s.stop()
    assert busy.startswith("error: the kforge server is busy") and "call the tool again" in busy, busy
    assert not later.startswith("error") and facts["turn"] == 1 and facts["lost"] is None


def test_verl_rows_carry_the_prompt_and_every_tools_create_kwargs(server):
    rows = verl_tool.verl_rows(server.endpoint, ["softmax_rows", "gelu_scale_residual"], seeds=(0, 1))
    assert [(r["extra_info"]["task"], r["extra_info"]["seed"]) for r in rows] == [
        ("softmax_rows", 0), ("softmax_rows", 1), ("gelu_scale_residual", 0), ("gelu_scale_residual", 1)]
    assert "softmax_rows" in rows[0]["prompt"][0]["content"] and rows[0]["agent_name"] == "tool_agent"
    kwargs = rows[3]["extra_info"]["tools_kwargs"]
    assert set(kwargs) == {"write_file", "read_file", "list_files", "compile", "verify", "profile", "submit", "history",
                           "restore", "diff"}
    assert kwargs["submit"]["create_kwargs"] == {"task": "gelu_scale_residual", "seed": 1, "options": None}


def test_without_verl_the_import_says_how_to_install_it():
    code = ("import sys; sys.modules['verl'] = None\n"
            "import kforge_client.adapters as a\n"
            "try:\n    a.KforgeTool\nexcept ImportError as e:\n    print(e)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       env=client_env())
    assert "needs verl" in r.stdout and "kforge-client[verl]" in r.stdout, r.stdout + r.stderr


@pytest.fixture(autouse=True)
def fresh_registry():
    """Each test starts with no remembered trajectory or instance (they are per process)."""
    verl_tool._TRAJECTORIES.clear()
    verl_tool._INSTANCES.clear()
    yield


def test_the_shipped_example_runs_and_writes_the_dataset(server, tmp_path):
    dataset = tmp_path / "train.parquet"
    r = subprocess.run([sys.executable, "tools/python/examples/verl_example.py"], cwd=SOURCE_DIR, capture_output=True,
                       text=True, timeout=300, env=client_env(KFORGE_ENDPOINT=server.endpoint, KFORGE_DATASET=str(dataset)))
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "compile -> compile: ok" in r.stdout and "score: {'score': -1.0, 'rule': 'unfinished'" in r.stdout, r.stdout[-2000:]
    import pandas as pd
    rows = pd.read_parquet(dataset)
    assert len(rows) == 4 and rows["extra_info"][3]["tools_kwargs"]["compile"]["create_kwargs"]["task"] == "gelu_scale_residual"


def byte_tokenizer():
    """A Hugging Face tokenizer built here (no hub): one token per byte, a ChatML-like chat template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast
    vocab = {c: i for i, c in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    template = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{% if m['content'] is string %}{{ m['content'] }}"
                "{% endif %}{% if m.get('tool_calls') %}{% for c in m['tool_calls'] %}<tool_call>{{ c['function'] | tojson }}"
                "</tool_call>{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
                "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|im_end|>",
                                   chat_template=template, additional_special_tokens=["<|im_start|>"])


def test_verls_whole_tool_agent_loop_masks_kforges_observations_out_of_the_response(server, tools):
    """verl's ToolAgentLoop.run itself (a scripted model behind its server manager, a real tokenizer):
    the response_mask is 1 on what the policy generated and 0 on kforge's observations."""
    from omegaconf import OmegaConf
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap, ToolListWrap
    from verl.workers.rollout.replica import TokenOutput
    tokenizer = byte_tokenizer()
    replies = ['Let me look.<tool_call>{"name": "list_files", "arguments": {}}</tool_call><|im_end|>',
               '<tool_call>{"name": "write_file", "arguments": {"path": "a.md", "content": "hello"}}</tool_call><|im_end|>',
               'Done.<|im_end|>']

    class ScriptedModel:  # verl's LLM server client: generate(request_id, prompt_ids, sampling_params, ...)
        async def generate(self, request_id, prompt_ids, sampling_params, **kwargs):
            return TokenOutput(token_ids=tokenizer.encode(replies.pop(0)), log_probs=None)

    multi_turn = {"max_user_turns": None, "max_assistant_turns": None, "max_parallel_calls": 1, "format": "hermes",
                  "max_tool_response_length": 4000, "tool_response_truncate_side": "middle"}
    config = OmegaConf.create({"actor_rollout_ref": {"rollout": {"prompt_length": 4096, "response_length": 4096,
                                                                 "full_determinism": False, "multi_turn": multi_turn}}})
    create = {"create_kwargs": {"task": "softmax_rows", "seed": 1}}

    async def main():
        loop = ToolAgentLoop(trainer_config=DictConfigWrap(config), server_manager=ScriptedModel(), tokenizer=tokenizer,
                             processor=None, dataset_cls=None, data_config=DictConfigWrap(OmegaConf.create({})),
                             tools=ToolListWrap(tools))
        out = await loop.run({}, raw_prompt=[{"role": "user", "content": "the task"}],
                             tools_kwargs={t.name: create for t in tools})
        return out, await verl_tool.compute_score(extra_info=dict(out.extra_fields))

    out, score = asyncio.run(main())
    spans = []
    for token, m in zip(out.response_ids, out.response_mask):
        if not spans or spans[-1][0] != m:
            spans.append((m, []))
        spans[-1][1].append(token)
    text = [(m, tokenizer.decode(ids)) for m, ids in spans]
    assert [m for m, _ in text] == [1, 0, 1, 0, 1], text
    assert text[0][1].startswith("Let me look.<tool_call>") and text[4][1] == "Done.<|im_end|>"
    assert "the workspace is empty" in text[1][1] and text[1][1].startswith("<|im_start|>tool")
    assert "wrote a.md (5 bytes)" in text[3][1]
    assert out.extra_fields["tool_rewards"] == [0.0, 0.0] and out.extra_fields["kforge"]["turn"] == 2
    assert score["rule"] == "unfinished" and score["turns"] == 2  # the model stopped without a submission
    assert [[x["info"]["tool"] for x in t["turns"]] for t in read_trajectories(server.record)] == [["list_files", "write_file"]]
