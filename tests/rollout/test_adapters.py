"""The trainer adapters (tools/python/kforge_client/adapters/: gymnasium_env, gymnasium_vector,
skyrl_env) against the real `kforge serve` binary without a GPU, with the real gymnasium and
skyrl-gym packages from PyPI (tools/setup.sh pins them): registration and make(), check_env,
seeding, the spaces holding every observation, the vector form with several episodes at once and
its three autoreset modes, skyrl's init/step/done and rewards, config errors, a server restart and
`busy`. Scripted policies are the shipped ones (datasets/samples/policies). GPU episodes reaching
each reward tier are in test_adapters_gpu.py."""
import importlib.metadata
import json
import os
import re
import subprocess
import sys
import threading
import time
import tomllib
import warnings

import gymnasium
import numpy as np
import pytest
import skyrl_gym
from gymnasium.utils.env_checker import check_env
from gymnasium.vector import AutoresetMode
from omegaconf import OmegaConf

sys.path.insert(0, os.path.dirname(__file__))
from scripted_policy import SOURCE_DIR, Policy, as_text  # noqa: E402
from client_harness import Server  # noqa: E402  (adds tools/python to sys.path)

from kforge_client import Client, KforgeError, read_trajectories  # noqa: E402
from kforge_client.adapters.gymnasium_env import ENV_ID, AnyText, KernelGymEnv  # noqa: E402
from kforge_client.adapters.gymnasium_vector import KernelVectorEnv  # noqa: E402
from kforge_client.adapters.skyrl_env import KforgeTextEnv  # noqa: E402

SUBMIT = '<tool_call>{"name": "submit", "arguments": {}}</tool_call>'
LIST = {"name": "list_files", "arguments": {}}


@pytest.fixture
def server(tmp_path):
    s = Server(tmp_path)
    yield s
    s.stop()


def strict_warnings():
    """Gymnasium's checkers report most findings as warnings: make each one a failure."""
    w = warnings.catch_warnings()
    w.__enter__()
    warnings.simplefilter("error")
    return w


# ---------------------------------------------------------------- Gymnasium: one environment

def test_make_by_module_path_and_by_id_plays_the_demo_policy_without_a_gpu(server):
    env = gymnasium.make("kforge_client.adapters.gymnasium_env:" + ENV_ID, endpoint=server.endpoint,
                         task="gelu_scale_residual")
    assert ENV_ID in gymnasium.registry and isinstance(env.unwrapped, KernelGymEnv)
    assert env.unwrapped.spec.nondeterministic and env.unwrapped.spec.kwargs["task"] == "gelu_scale_residual"
    obs, info = env.reset(seed=11)
    assert obs in env.observation_space and "gelu_scale_residual" in obs and info["seed"] == 11
    steps = [env.step(a) for a in Policy("gelu_fused").actions()]
    for obs, reward, terminated, truncated, info in steps:
        assert obs in env.observation_space and type(reward) is float and type(terminated) is bool
    assert steps[2][0].startswith("kernel.cu") and "launch.yaml" in steps[2][0]   # list_files
    assert steps[3][0].startswith("compile: ok"), steps[3][0]                     # Hermes text action
    assert "not run (no_gpu)" in steps[4][0] and steps[4][4]["report"]["harness_error"]["kind"] == "no_gpu"
    assert not any(s[2] or s[3] for s in steps)  # a no_gpu submit does not end the episode
    episode = env.unwrapped.episode
    env.close()
    env.close()  # closing twice is allowed
    assert [t["episode"] for t in read_trajectories(server.record)] == [episode]
    # The id alone, once the module is imported; make() passes the kwargs through.
    again = gymnasium.make(ENV_ID, endpoint=server.endpoint, task="softmax_rows", max_observation_chars=50000)
    assert again.observation_space.max_length == 50000 and again.unwrapped.task == "softmax_rows"
    again.close()


def test_the_candidate_history_tools_answer_and_every_step_info_carries_the_history(server):
    # Without a GPU nothing is judged, so the history stays empty: the tools answer, a version that
    # does not exist is refused, and the history reaches the info, KernelEnv and the trajectory.
    env = gymnasium.make(ENV_ID, endpoint=server.endpoint, task="gelu_scale_residual")
    env.reset(seed=3)
    obs, _, _, _, info = env.step('<tool_call>{"name": "history", "arguments": {}}</tool_call>')
    assert obs.startswith("history: no version yet") and info["history"] == [] and info["tool_ok"], obs
    obs, _, _, _, info = env.step({"name": "restore", "arguments": {"version": "v2"}})
    assert "there is no version 2 (0 so far" in obs and not info["tool_ok"], obs
    obs, _, _, _, info = env.step({"name": "diff", "arguments": {"a": 1, "b": "two"}})
    assert "diff: argument 'b' must be an integer >= 1" in info["action_error"], info
    obs, _, terminated, _, info = env.step({"name": "submit", "arguments": {"version": 1}})
    assert "there is no version 1" in obs and not terminated, obs
    assert info["history"] == [] and env.unwrapped.history == [] and env.unwrapped.best_version() is None
    names = {t["function"]["name"] for t in env.unwrapped.tools}
    assert {"history", "restore", "diff"} <= names
    episode = env.unwrapped.episode
    env.close()
    [t] = [t for t in read_trajectories(server.record) if t["episode"] == episode]
    assert t["history"] == [] and t["reward_from"] == "last_submission"


def test_best_version_picks_the_fastest_verified_version():
    from kforge_client import best_version
    history = [{"version": 1, "verified": True, "speedup": {"point": 2.5}},
               {"version": 2, "verified": True, "speedup": {"point": 3.2}},
               {"version": 3, "verified": False, "speedup": {"point": 9.0}},
               {"version": 4, "verified": True, "speedup": None}]
    assert best_version(history)["version"] == 2
    assert best_version(history[2:])["version"] == 4, "an untimed verified version beats none"
    assert best_version([history[2]]) is None and best_version([]) is None


def test_check_env_passes_with_every_warning_an_error(server):
    env = gymnasium.make(ENV_ID, endpoint=server.endpoint, task="softmax_rows")
    w = strict_warnings()
    try:
        check_env(env.unwrapped)  # spaces, reset/seed/options, step, data not reused, render, close
    finally:
        w.__exit__(None, None, None)
    env.close()


def test_unsupported_render_modes_and_a_missing_endpoint_are_refused(server):
    with pytest.raises(ValueError, match="render_mode"):
        KernelGymEnv(server.endpoint, task="softmax_rows", render_mode="human")
    with pytest.raises(ValueError, match="endpoint"):
        gymnasium.make(ENV_ID, task="softmax_rows")


def test_seeded_resets_replay_the_same_episode_seeds_and_observations(server):
    def seeds_and_obs(first):
        with KernelGymEnv(server.endpoint, task="softmax_rows") as env:
            out = []
            for seed in (first, None, None):
                obs, info = env.reset(seed=seed)
                out.append((info["seed"], obs))
            return out
    a, b, c = seeds_and_obs(7), seeds_and_obs(7), seeds_and_obs(8)
    assert a == b and a[0][0] == 7 and len({s for s, _ in a}) == 3
    assert [s for s, _ in a[1:]] != [s for s, _ in c[1:]]  # another seed, another stream of episode seeds
    assert a[0][1] == c[0][1]  # the prompt does not depend on the seed


def test_same_seed_same_actions_differ_only_in_times_and_ids(server):
    """Why the registration says nondeterministic: what a seed cannot fix is wall-clock time, the
    episode id and the compiler's timing (and, on a GPU, every measurement)."""
    actions = Policy("gelu_fused").actions()[:4] + [{"name": "read_file", "arguments": {"path": "launch.yaml"}}]

    def play():
        with KernelGymEnv(server.endpoint, task="gelu_scale_residual") as env:
            return [env.reset(seed=5)] + [env.step(a) for a in actions]
    a, b = play(), play()
    timing = {"elapsed_s", "episode", "compile_ms", "wall_ms", "cache_hit"}
    for x, y in zip(a, b):
        for k in set(x[-1]) | set(y[-1]):
            if k == "report":
                assert {j for j in x[-1][k]["compile"] if x[-1][k]["compile"][j] != y[-1][k]["compile"][j]} <= timing
            elif x[-1].get(k) != y[-1].get(k):
                assert k in timing, k
        assert x[1:-1] == y[1:-1]  # reward, terminated, truncated
        # The observations are equal but for what a compile's first line says of its time and cache.
        def untimed(obs):
            return re.sub(r"[0-9.]+ ms|, cached", "", obs)
        assert untimed(x[0]) == untimed(y[0])
    assert a[0][0] == b[0][0] and a[5][0] == b[5][0] and a[4][0].startswith("compile: ok")


def test_the_spaces_hold_any_unicode_text_and_observations_outside_ascii(server):
    space = AnyText(100)
    assert isinstance(space, gymnasium.spaces.Text) and "" in space and "x" * 100 in space
    assert "x" * 101 not in space and b"bytes" not in space and "\ud800" not in space  # a lone surrogate
    assert "—ü 文字 🚀" in space and space.sample() in space and space == AnyText(100) and space != AnyText(99)
    with KernelGymEnv(server.endpoint, task="softmax_rows") as env:
        obs, _ = env.reset(seed=1)
        assert any(ord(c) > 127 for c in obs) and obs in env.observation_space  # the prompt has a '—'
        note = "// 🚀 fast path — no bank conflicts\n"
        env.step({"name": "write_file", "arguments": {"path": "notes.md", "content": note}})
        obs, *_ = env.step({"name": "read_file", "arguments": {"path": "notes.md"}})
        assert "🚀" in obs and obs in env.observation_space
        action = as_text({"name": "write_file", "arguments": {"path": "kernel.cu", "content": "// ✓\n"}})
        assert action in env.action_space
        obs, reward, *_ = env.step(action)
        assert obs.startswith("wrote kernel.cu") and reward == 0.0


# ---------------------------------------------------------------- Gymnasium: the vector form

def test_make_vec_runs_n_episodes_at_once_over_one_socket(server):
    envs = gymnasium.make_vec(ENV_ID, num_envs=4, endpoint=server.endpoint, task="softmax_rows")
    assert isinstance(envs, KernelVectorEnv) and envs.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    obs, infos = envs.reset(seed=100)
    assert len(obs) == 4 and obs in envs.observation_space and list(infos["seed"]) == [100, 101, 102, 103]
    assert len(set(infos["episode"])) == 4
    # Each sub-episode writes its own file: the replies, matched by request id, go back to their own.
    obs, rewards, term, trunc, infos = envs.step(
        [{"name": "write_file", "arguments": {"path": f"n{i}.md", "content": "x" * (i + 1)}} for i in range(4)])
    obs, *_ = envs.step([LIST] * 4)
    assert [o.split()[0] for o in obs] == [f"n{i}.md" for i in range(4)], obs
    assert rewards.dtype == np.float64 and not term.any() and not trunc.any() and list(infos["turn"]) == [1] * 4
    assert envs.client.reconnects == 0
    envs.close()
    envs.close()
    assert len(read_trajectories(server.record)) == 4  # closing recorded every episode


def test_vector_steps_are_in_flight_at_once(server):
    """The N steps of one vector step reach the server together: a poller of the server's health sees
    several steps in flight while four compiles (distinct sources, so none is a cache hit) run."""
    kernel = Policy("gelu_fused").actions()[0]["arguments"]["content"]
    envs = KernelVectorEnv(4, endpoint=server.endpoint, task="gelu_scale_residual")
    envs.reset(seed=0, options={"files": {"launch.yaml": Policy("gelu_fused").actions()[1]["arguments"]["content"]}})
    envs.step([{"name": "write_file", "arguments": {"path": "kernel.cu", "content": kernel + f"// {i} {time.time()}\n"}}
               for i in range(4)])
    seen, stop = [], threading.Event()

    def poll():
        with Client(server.endpoint) as c:
            while not stop.is_set():
                seen.append(c.health()["episodes"]["steps_in_flight"])
                time.sleep(0.002)
    poller = threading.Thread(target=poll)
    poller.start()
    try:
        obs, *_ = envs.step([{"name": "compile", "arguments": {}}] * 4)
    finally:
        stop.set()
        poller.join()
    envs.close()
    assert all(o.startswith("compile: ok") and "cached" not in o.splitlines()[0] for o in obs), obs
    assert max(seen) >= 2, seen  # one at a time would never show more than 1


def test_vector_next_step_autoreset_ignores_the_action_after_an_episode_ends(server):
    envs = KernelVectorEnv(2, endpoint=server.endpoint, task="softmax_rows")
    _, first = envs.reset(seed=1)
    _, rewards, term, _, infos = envs.step([SUBMIT, LIST])  # sub 0 submits an empty workspace: -1, ends
    assert list(rewards) == [-1.0, 0.0] and list(term) == [True, False]
    assert infos["reward"]["rule"][0] == "compile_error" and not infos["_reward"][1]
    obs, rewards, term, _, infos = envs.step([SUBMIT, LIST])  # sub 0 resets; its SUBMIT is ignored
    assert "softmax_rows" in obs[0] and rewards[0] == 0.0 and not term[0] and list(infos["turn"]) == [0, 2]
    assert infos["episode"][0] != first["episode"][0] and infos["episode"][1] == first["episode"][1]
    envs.close()


def test_vector_same_step_autoreset_returns_the_final_observation_in_info(server):
    envs = KernelVectorEnv(2, endpoint=server.endpoint, task="softmax_rows", autoreset_mode=AutoresetMode.SAME_STEP)
    envs.reset(seed=1)
    obs, rewards, term, _, infos = envs.step([SUBMIT, LIST])
    assert "softmax_rows" in obs[0] and rewards[0] == -1.0 and term[0] and infos["turn"][0] == 0
    assert infos["final_obs"][0].startswith("submit:") and infos["final_obs"][1] is None
    assert infos["final_info"]["reward"]["rule"][0] == "compile_error" and list(infos["_final_info"]) == [True, False]
    envs.close()


def test_vector_disabled_autoreset_resets_only_the_masked_episodes(server):
    envs = KernelVectorEnv(2, endpoint=server.endpoint, task="softmax_rows", autoreset_mode="Disabled")
    _, first = envs.reset(seed=3)
    envs.step([SUBMIT, LIST])
    with pytest.raises(ValueError, match="reset_mask"):
        envs.step([LIST, LIST])
    obs, infos = envs.reset(options={"reset_mask": np.array([True, False])})
    assert list(infos["_episode"]) == [True, False] and infos["episode"][0] != first["episode"][0]
    assert obs[1] == "the workspace is empty\n"  # sub 1 keeps its last observation
    _, _, _, _, infos = envs.step([LIST, LIST])
    assert list(infos["turn"]) == [1, 2]
    envs.close()


def test_vector_seeds_replay_including_automatic_resets(server):
    def seeds():
        envs = KernelVectorEnv(2, endpoint=server.endpoint, task="softmax_rows")
        _, infos = envs.reset(seed=[40, 2])
        out = list(infos["seed"])
        envs.step([SUBMIT, SUBMIT])
        _, _, _, _, infos = envs.step([LIST, LIST])  # both reset with a seed drawn from their generator
        envs.close()
        return out + list(infos["seed"])
    a, b = seeds(), seeds()
    assert a == b and a[:2] == [40, 2] and len(set(a)) == 4


# ---------------------------------------------------------------- SkyRL

def skyrl_env(server, **extras):
    return skyrl_gym.make("kforge", env_config={"endpoint": server.endpoint}, extras={"task": "gelu_scale_residual",
                                                                                         **extras})


def test_skyrl_make_init_step_until_truncation_with_the_no_submission_reward(server):
    env = skyrl_env(server, seed=4, max_turns=6, reward_spec={"method": "rule"})  # dataset fields are ignored
    assert isinstance(env, KforgeTextEnv) and env.spec.id == "kforge"
    messages, metadata = env.init([{"role": "system", "content": "You write CUDA kernels."}])
    assert [m["role"] for m in messages] == ["system", "user"] and "gelu_scale_residual" in messages[1]["content"]
    assert metadata["seed"] == 4 and metadata["max_turns"] == 6 and env.max_turns == 6
    with pytest.raises(RuntimeError, match="once"):
        env.init([])
    outs = [env.step(text) for text in Policy("no_submit").texts(limit=6)]
    for out in outs[:-1]:
        assert not out["done"] and out["reward"] == 0.0 and out["observations"][0]["role"] == "user"
    assert outs[2]["observations"][0]["content"].startswith("compile: ok")
    last = outs[-1]
    assert last["done"] and last["reward"] == -1.0 and last["observations"] == []
    assert last["metadata"]["reward"]["rule"] == "no_submission" and "max_turns" in last["metadata"]["observation"]
    assert env.get_metrics() == {"episode_reward": -1.0, "turns": 6, "submitted": 0, "truncated": 1, "lost": 0}
    with pytest.raises(RuntimeError, match="over"):
        env.step(SUBMIT)
    env.close()
    env.close()
    [trajectory] = read_trajectories(server.record)
    assert len(trajectory["turns"]) == 6 and trajectory["seed"] == 4


def test_skyrl_a_submission_ends_the_episode_with_its_reward_and_dictconfig_works(server):
    config = OmegaConf.create({"endpoint": server.endpoint, "observation_role": "tool"})
    env = skyrl_gym.make("kforge", env_config=config, extras={"task": "softmax_rows", "max_turns": 4})
    env.init([])
    out = env.step("I will list the files first.\n" + as_text(LIST))
    assert out["observations"] == [{"role": "tool", "content": "the workspace is empty\n"}]
    out = env.step(SUBMIT)
    assert out["done"] and out["reward"] == -1.0 and out["metadata"]["reward"]["rule"] == "compile_error"
    metrics = env.get_metrics()
    assert metrics["submitted"] == 1 and metrics["truncated"] == 0
    assert KforgeTextEnv.aggregate_metrics([metrics, metrics])["episode_reward"] == -1.0
    env.close()


def test_skyrl_config_errors_name_the_key(server):
    with pytest.raises(ValueError, match="endpoit"):
        KforgeTextEnv({"endpoit": server.endpoint}, {"task": "softmax_rows"})
    with pytest.raises(ValueError, match="endpoint is required"):
        KforgeTextEnv({}, {"task": "softmax_rows"})
    with pytest.raises(ValueError, match="task is required"):
        KforgeTextEnv({"endpoint": server.endpoint}, {})
    with pytest.raises(ValueError, match="on_error"):
        KforgeTextEnv({"endpoint": server.endpoint, "on_error": "ignore"}, {"task": "softmax_rows"})
    env = KforgeTextEnv({"endpoint": server.endpoint}, {"task": "no_such_task"})
    with pytest.raises(KforgeError, match="unknown_task"):
        env.init([])
    env.close()


def test_a_server_restart_ends_skyrl_episodes_and_gym_steps_raise_until_reset(server):
    sky = skyrl_env(server)
    sky.init([])
    sky_raise = skyrl_gym.make("kforge", env_config={"endpoint": server.endpoint, "on_error": "raise"},
                               extras={"task": "softmax_rows"})
    sky_raise.init([])
    gym_env = KernelGymEnv(server.endpoint, task="softmax_rows")
    gym_env.reset(seed=0)
    envs = KernelVectorEnv(2, endpoint=server.endpoint, task="softmax_rows")
    envs.reset(seed=0)
    server.kill()
    server.start()  # the same endpoint; the new server knows none of the episodes
    out = sky.step(as_text(LIST))
    assert out["done"] and out["reward"] == 0.0 and out["metadata"]["kforge_error"]["kind"] == "unknown_episode"
    assert sky.get_metrics()["lost"] == 1
    sky.close()
    with pytest.raises(KforgeError, match="unknown_episode"):
        sky_raise.step(as_text(LIST))
    sky_raise.close()
    with pytest.raises(KforgeError, match="unknown_episode"):
        gym_env.step(LIST)
    obs, info = gym_env.reset(seed=1)  # a new episode on the new server
    assert info["seed"] == 1 and gym_env.step(LIST)[0] == "the workspace is empty\n"
    gym_env.close()
    with pytest.raises(KforgeError, match="unknown_episode"):
        envs.step([LIST, LIST])
    assert sorted(envs.last_errors) == [0, 1]
    envs.reset(seed=5)
    assert envs.last_errors == {} and list(envs.step([LIST, LIST])[4]["turn"]) == [1, 1]
    envs.close()


def test_busy_is_waited_for_up_to_busy_timeout(tmp_path):
    s = Server(tmp_path, sessions={"max_episodes": 1})
    try:
        first = skyrl_gym.make("kforge", env_config={"endpoint": s.endpoint}, extras={"task": "softmax_rows"})
        first.init([])
        second = skyrl_gym.make("kforge", env_config={"endpoint": s.endpoint, "busy_timeout": 1.0},
                                extras={"task": "softmax_rows"})
        start = time.monotonic()
        with pytest.raises(KforgeError, match="busy"):
            second.init([])
        assert 0.9 < time.monotonic() - start < 10
        first.close()  # its slot frees: the next init gets it
        second.init([])
        assert second.step(as_text(LIST))["observations"][0]["content"] == "the workspace is empty\n"
        second.close()
    finally:
        s.stop()


def test_extras_json_round_trip_as_a_dataset_row_would_carry_them(server):
    row = json.loads(json.dumps({"env_class": "kforge", "prompt": [], "task": "softmax_rows", "seed": 12,
                                 "options": {"max_turns": 2}}))
    env = skyrl_gym.make(row["env_class"], env_config={"endpoint": server.endpoint}, extras=row)
    _, metadata = env.init(row["prompt"])
    assert metadata["seed"] == 12 and metadata["max_turns"] == 2
    env.close()


# ---------------------------------------------------------------- examples and packaging

@pytest.mark.parametrize("example", ["gymnasium_episode.py", "skyrl_episode.py"])
def test_the_examples_play_an_episode(server, example):
    path = os.path.join(SOURCE_DIR, "tools", "python", "examples", example)
    with open(path) as f:
        assert len(f.read().splitlines()) <= 30
    env = {**os.environ, "PYTHONPATH": os.path.join(SOURCE_DIR, "tools", "python")}
    r = subprocess.run([sys.executable, path, server.endpoint], capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert any("compile: ok" in line for line in lines) and any("not run (no_gpu)" in line for line in lines), r.stdout


def test_the_extras_pin_the_versions_setup_installs_and_the_tests_run():
    with open(os.path.join(SOURCE_DIR, "tools", "python", "pyproject.toml"), "rb") as f:
        extras = tomllib.load(f)["project"]["optional-dependencies"]
    with open(os.path.join(SOURCE_DIR, "tools", "setup.sh")) as f:
        setup = f.read()
    for extra, package in (("gymnasium", "gymnasium"), ("skyrl", "skyrl-gym")):
        [requirement] = extras[extra]
        version = requirement.split("~=")[1]
        assert requirement == f"{package}~={version}" and importlib.metadata.version(package) == version
        assert f"{package.replace('-', '_')}_version={version}" in setup
