"""The trainer adapters on a GPU (ctest label gpu): one episode per reward tier and adapter, played
by the shipped scripted policies against `kforge serve` with its GPU lanes, as
tests/env/episode/episode_gpu_test.cpp plays them in process:

- -1: compile_error (linear_relu, a typo, submitted anyway);
- 1: linear_relu_tiled (correct, ~0.8x eager on an H200);
- 2: gelu_fused on gelu_tier2, the gelu_scale_residual sample without a stored torch.compile
  time (so tier 2 is the top; the candidate is ~3.2x eager);
- 3: gelu_fused on gelu_tier3, the same with torch.compile stored exactly as fast as eager.

The two task variants are written into a task directory the server serves; that they are served
is checked on any machine. Each GPU test skips, saying why, where the server finds no GPU."""
import json
import os
import re
import sys

import gymnasium
import pytest
import skyrl_gym

sys.path.insert(0, os.path.dirname(__file__))
from scripted_policy import SOURCE_DIR, Policy  # noqa: E402
from client_harness import Server, reward_config_rescaling  # noqa: E402

from kforge_client import Client, read_trajectories  # noqa: E402
from kforge_client.adapters.gymnasium_env import ENV_ID  # noqa: E402
import kforge_client.adapters.skyrl_env  # noqa: E402,F401  (registers kforge)

# (policy, task, reward, rule)
TIERS = [("compile_error", "linear_relu", -1.0, "compile_error"),
         ("linear_relu_tiled", "linear_relu", 1.0, "correct"),
         ("gelu_fused", "gelu_tier2", 2.0, "faster_than_eager"),
         ("gelu_fused", "gelu_tier3", 3.0, "faster_than_both")]


def write_tier_tasks(directory):
    with open(os.path.join(SOURCE_DIR, "datasets", "samples", "gelu_scale_residual.yaml")) as f:
        sample = f.read()
    eager = re.search(r"^  eager_ms: ([0-9.]+)$", sample, re.M).group(1)
    # gelu_tier3's times are synthetic and keep the sample's H200: gpu_server's reward config
    # rescales another model's baseline (compile_baseline.other_gpu), so tier 3 is reachable on any GPU.
    tier3 = re.sub(r"^  compile_ms: .*$", f"  compile_ms: {eager}", sample, flags=re.M)
    variants = {"gelu_tier2": re.sub(r"^  compile_ms: .*\n", "", sample, flags=re.M), "gelu_tier3": tier3}
    for name, text in variants.items():
        text = text.replace("id: gelu_scale_residual", f"id: {name}", 1)
        (directory / f"{name}.yaml").write_text(text)


@pytest.fixture(scope="module")
def gpu_server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("gpu_adapters")
    (tmp / "tasks").mkdir()
    write_tier_tasks(tmp / "tasks")
    s = Server(tmp, scheduler={"gpus": -1, "compile_workers": 2}, tasks={"dirs": [str(tmp / "tasks")]},
               reward_config=reward_config_rescaling(tmp))
    with Client(s.endpoint) as c:
        s.gpus = c.health()["gpus"]
    yield s
    s.stop()


def need_gpu(server):
    if not server.gpus:
        why = "no GPU lane: the server found no CUDA device on this machine; run on a GPU host (ctest -L gpu)"
        print(f"KFORGE_SKIPPED: {why}")
        pytest.skip(why)


def test_the_tier_tasks_are_served_with_the_baselines_they_need(gpu_server):
    with Client(gpu_server.endpoint) as c:
        listed = {t["name"]: t for t in c.tasks(source="samples", limit=100)["tasks"] + c.tasks(limit=100)["tasks"]}
        for name in ("gelu_tier2", "gelu_tier3"):
            r = c.reset(name, seed=1)
            assert name in r["observation"]
            c.close_episode(r["episode"])
    assert listed["gelu_tier2"]["compile_ms"] is None and listed["gelu_tier2"]["eager_ms"] > 0
    assert listed["gelu_tier3"]["compile_ms"] == listed["gelu_tier3"]["eager_ms"]


@pytest.mark.parametrize("policy,task,reward,rule", TIERS)
def test_gymnasium_episode_reaches_its_tier(gpu_server, policy, task, reward, rule):
    need_gpu(gpu_server)
    env = gymnasium.make(ENV_ID, endpoint=gpu_server.endpoint, task=task)
    obs, info = env.reset(seed=42)
    assert info["gpu"] is not None
    for action in Policy(policy).actions():
        obs, r, terminated, truncated, info = env.step(action)
        print(f"[gym {policy}/{task}] turn {info['turn']} {info['tool']} -> {obs[:60]!r} reward {r}")
        assert obs in env.observation_space
        if terminated or truncated:
            break
    env.close()
    assert terminated and info["termination_reason"] == "submitted"
    assert r == reward and info["reward"]["rule"] == rule, info["reward"]


@pytest.mark.parametrize("policy,task,reward,rule", TIERS)
def test_skyrl_episode_reaches_its_tier(gpu_server, policy, task, reward, rule):
    need_gpu(gpu_server)
    env = skyrl_gym.make("kforge", env_config={"endpoint": gpu_server.endpoint}, extras={"task": task, "seed": 42})
    env.init([])
    for text in Policy(policy).texts():
        out = env.step(text)
        if out["done"]:
            break
    metrics = env.get_metrics()
    env.close()
    print(f"[skyrl {policy}/{task}] reward {out['reward']} metrics {metrics}")
    assert out["done"] and out["reward"] == reward and out["metadata"]["reward"]["rule"] == rule, out["metadata"]
    assert metrics["submitted"] == 1 and metrics["episode_reward"] == reward
    assert (reward > 0) == ("speedup_eager" in metrics)


def test_vector_episodes_share_the_gpu_queue_and_each_reach_tier_two(gpu_server):
    need_gpu(gpu_server)
    envs = gymnasium.make_vec(ENV_ID, num_envs=2, endpoint=gpu_server.endpoint, task="gelu_tier2",
                              autoreset_mode="Disabled")
    envs.reset(seed=7)
    for action in Policy("gelu_fused").actions():
        obs, rewards, terminations, truncations, infos = envs.step([action, action])
    envs.close()
    assert terminations.all() and list(rewards) == [2.0, 2.0], infos["reward"]


@pytest.fixture(scope="module")
def best_verified_server(tmp_path_factory):
    """A GPU server whose environment takes the reward from the best verified version (issue 30)."""
    tmp = tmp_path_factory.mktemp("gpu_history")
    (tmp / "tasks").mkdir()
    write_tier_tasks(tmp / "tasks")
    (tmp / "env.yaml").write_text("history: {reward_from: best_verified}\n")
    s = Server(tmp, scheduler={"gpus": -1, "compile_workers": 2}, tasks={"dirs": [str(tmp / "tasks")]},
               reward_config=reward_config_rescaling(tmp))
    s.stop()  # env_config is a top-level path, not a section: written into the config, then served
    config = json.loads(s.config.read_text())
    config["env_config"] = str(tmp / "env.yaml")
    s.config.write_text(json.dumps(config))
    s.start()
    with Client(s.endpoint) as c:
        s.gpus = c.health()["gpus"]
    yield s
    s.stop()


def test_gymnasium_info_and_the_trajectory_carry_the_history_of_improve_regress_restore(best_verified_server):
    need_gpu(best_verified_server)
    env = gymnasium.make(ENV_ID, endpoint=best_verified_server.endpoint, task="gelu_tier2")
    env.reset(seed=42)
    # Up to the broken v3's verify (turn 9); closing then records the trajectory.
    for action in Policy("improve_regress_restore").actions()[:9]:
        obs, r, terminated, truncated, info = env.step(action)
        print(f"[gym history] turn {info['turn']} {info['tool']} -> {obs[:60]!r} reward {r}")
    assert [v["version"] for v in info["history"]] == [1, 2, 3] and info["version"] == 3
    assert [v["verified"] for v in info["history"]] == [True, True, False]
    assert info["history"][1]["speedup"]["point"] > info["history"][0]["speedup"]["point"]
    assert env.unwrapped.best_version()["version"] == 2
    episode = env.unwrapped.episode
    env.close()
    [t] = [t for t in read_trajectories(best_verified_server.record) if t["episode"] == episode]
    assert t["reward_from"] == "best_verified" and len(t["history"]) == 3
    assert "float4" in t["history"][1]["files"]["kernel.cu"]


def test_a_best_verified_episode_cut_short_by_a_write_judges_its_best_version_on_a_gpu_lane(best_verified_server):
    """The last turn is a write_file (a front-lane tool): the server runs it on a GPU lane, where the
    best version is judged once more as a submission before it pays (KernelEnv::step_lane)."""
    need_gpu(best_verified_server)
    fused = os.path.join(SOURCE_DIR, "datasets", "samples", "candidates", "gelu_scale_residual", "fused")
    files = {name: open(os.path.join(fused, name)).read() for name in ("kernel.cu", "launch.yaml")}
    with Client(best_verified_server.endpoint) as c:
        r = c.reset("gelu_tier2", seed=3, options={"max_turns": 4, "files": files})
        episode = r["episode"]
        c.step(episode, {"name": "profile", "arguments": {}})
        c.step(episode, {"name": "write_file", "arguments": {"path": "notes.md", "content": "v1 is the one"}})
        c.step(episode, {"name": "write_file", "arguments": {"path": "kernel.cu", "content": "// broken\n"}})
        last = c.step(episode, {"name": "write_file", "arguments": {"path": "notes.md", "content": "out of turns"}})
        print(f"[best_verified, cut short by a write] reward {last['reward']}: {last['info']['reward']}")
        assert last["truncated"] and last["timings"]["lane"] == "gpu", last["timings"]
        confirmation = last["info"]["reward"]["confirmation"]
        assert confirmation["ran"] and confirmation["version"] == 1, confirmation
        assert last["info"]["reward"]["rule"] == "faster_than_eager" and last["reward"] >= 2
        c.close_episode(episode)
