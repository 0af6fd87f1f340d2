"""The Python client (tools/python/kforge_client) against the real `kforge serve` binary on ipc and
loopback endpoints, without a GPU: the Gymnasium-style env, errors as exceptions with kinds, busy
backpressure, the asyncio client with many episodes, the trajectory reader, `kforge record`, a
server killed and restarted (finished trajectories stay on disk, the client reconnects), SIGTERM,
timeouts and busy retries as wall-clock bounds, KernelEnv's server check,
no_gpu answers, start-up messages, packaging. The evaluation loop and `kforge-evaluate`:
test_client_evaluate.py."""
import asyncio
import json
import os
import re
import subprocess
import threading
import time

import h5py
import pytest

from client_harness import KFORGE, SOURCE_DIR, Server, call, candidate, dead_endpoint, write
from kforge_client import AsyncClient, Client, KernelEnv, KforgeError, ServerUnavailable, TrajectoryReader
from kforge_client import read_trajectories


def test_gym_env_episode_without_gpu_and_its_recorded_trajectory(server):
    with KernelEnv(server.endpoint, task="gelu_scale_residual") as env:
        obs, info = env.reset(seed=11, options={"max_turns": 8})
        assert "gelu_scale_residual" in obs and info["turn"] == 0
        assert {t["function"]["name"] for t in env.tools} >= {"write_file", "compile", "submit"}
        env.step(write("kernel.cu", candidate("kernel.cu")))
        obs, reward, term, trunc, info = env.step(write("launch.yaml", candidate("launch.yaml")))
        assert obs.startswith("wrote launch.yaml") and reward == 0 and not term and not trunc
        obs, *_ = env.step(call("list_files"))
        assert "kernel.cu" in obs and "launch.yaml" in obs
        obs, _, _, _, info = env.step('Compiling.\n<tool_call>{"name": "compile", "arguments": {}}</tool_call>')
        assert obs.startswith("compile: ok"), obs
        assert info["verdict"] == "checked"
        obs, _, term, trunc, info = env.step(call("verify"))
        assert "no GPU" in obs and not term and not trunc
        episode = env.episode
    # close() recorded it: the client-side reader finds every turn.
    trajectories = read_trajectories(server.record)
    assert len(trajectories) == 1
    t = trajectories[0]
    assert t["episode"] == episode and t["seed"] == 11 and t["end_cause"] == "closed"
    assert [turn["info"]["tool"] for turn in t["turns"]] == ["write_file", "write_file", "list_files", "compile", "verify"]
    assert t["turns"][3]["timings"]["lane"] == "compile"
    with h5py.File(server.record, "r", locking=False) as f:  # plain h5py works too
        assert f["trajectories/index"]["episode"][0].decode() == episode


def test_a_dataset_whose_gpu_stage_is_not_done_is_served_and_says_so(tmp_path):
    # kforge synth's output: every row cpu_ok (no GPU stage yet). They are served, the start-up
    # line says how many have no GPU measurement, and the listing gives them no baselines.
    (tmp_path / "synth.yaml").write_text("seed: 5\ntarget_tasks: 3\nshard_candidates: 10\n")
    subprocess.run([KFORGE, "synth", "--config", str(tmp_path / "synth.yaml"), "--out", str(tmp_path / "ds"), "--quiet"],
                   check=True, capture_output=True, text=True, timeout=600)
    s = Server(tmp_path, record=False, tasks={"samples": False, "datasets": [str(tmp_path / "ds")]})
    try:
        assert "(3 tasks, 3 of them not yet measured on a GPU" in s.line, s.line
        with Client(s.endpoint) as c:
            listed = c.tasks()["tasks"]
            assert len(listed) == 3 and all(t["eager_ms"] is None and t["compile_ms"] is None for t in listed)
    finally:
        s.stop()
    s = Server(tmp_path, record=False, tasks={"datasets": [str(tmp_path / "ds")], "serve_unmeasured": False})
    try:  # left out: the samples alone are served, and the line says what was left out
        assert "(13 tasks; 3 dataset rows not yet measured on a GPU left out" in s.line, s.line
        with Client(s.endpoint) as c:
            assert all(not t["name"].startswith("syn") for t in c.tasks(limit=1000)["tasks"])
    finally:
        s.stop()
    s = Server(tmp_path, record=False)  # the samples alone: nothing unmeasured to say
    try:
        assert "not yet measured" not in s.line, s.line
    finally:
        s.stop()


def test_errors_are_exceptions_with_kinds_and_busy_carries_retry_after(tmp_path):
    s = Server(tmp_path, sessions={"max_episodes": 1})
    try:
        c = Client(s.endpoint, busy_retries=0)
        with pytest.raises(KforgeError) as e:
            c.step("ep-nope", call("list_files"))
        assert e.value.kind == "unknown_episode" and e.value.field == "episode"
        with pytest.raises(KforgeError) as e:
            c.reset("no_such_task")
        assert e.value.kind == "unknown_task"
        with pytest.raises(KforgeError) as e:
            c.call("reset", task="softmax_rows", sed=3)
        assert e.value.kind == "bad_params" and e.value.field == "sed"
        first = c.reset("softmax_rows")
        with pytest.raises(KforgeError) as e:
            c.reset("softmax_rows")
        assert e.value.kind == "busy" and e.value.retry_after > 0
        # A client that retries busy replies gets in once a slot frees up.
        patient = Client(s.endpoint, busy_retries=50)
        threading.Timer(0.5, lambda: Client(s.endpoint).close_episode(first["episode"])).start()
        second = patient.reset("softmax_rows")
        assert second["episode"] != first["episode"]
    finally:
        s.stop()


def test_async_client_runs_many_concurrent_episodes(server):
    async def one(c, i):
        ep = await c.reset("softmax_rows", seed=i)
        obs, *_ = await ep.step(write(f"notes_{i}.md", f"episode {i}"))
        assert obs.startswith(f"wrote notes_{i}.md")
        obs, *_ = await ep.step(call("read_file", path=f"notes_{i}.md"))
        await ep.close()
        return obs

    async def main():
        async with AsyncClient(server.endpoint) as c:
            return await asyncio.gather(*[one(c, i) for i in range(64)])

    assert asyncio.run(main()) == [f"episode {i}" for i in range(64)]
    assert len(read_trajectories(server.record)) == 64


def test_killed_server_keeps_finished_trajectories_and_the_client_reconnects(tmp_path):
    s = Server(tmp_path, endpoint="tcp://127.0.0.1:%d" % (20000 + os.getpid() % 20000))
    c = Client(s.endpoint, timeout=2.0, backoff=0.05)
    for i in range(3):
        ep = c.reset("softmax_rows", seed=i)["episode"]
        c.step(ep, call("list_files"))
        c.close_episode(ep)
    c.reset("softmax_rows")  # open, never finished: lost with the process
    s.kill()  # SIGKILL: no chance to flush anything
    assert len(read_trajectories(s.record)) == 3
    with pytest.raises(ServerUnavailable):
        c.reset("softmax_rows")  # not repeated: it might have been acted on
    s.start()  # same endpoint, same file
    assert c.health()["status"] == "ok"  # the same client object, reconnected
    ep = c.reset("softmax_rows")["episode"]
    c.close_episode(ep)
    s.stop()
    index = TrajectoryReader(s.record).index
    assert len(index) == 4 and index["episode"][3].decode() == ep


def test_sigterm_finishes_running_steps_and_records_open_episodes(server):
    c = Client(server.endpoint)
    ep = c.reset("gelu_scale_residual")["episode"]
    c.step(ep, write("kernel.cu", candidate("kernel.cu")))
    c.step(ep, write("launch.yaml", candidate("launch.yaml")))
    idle = c.reset("softmax_rows")["episode"]
    result = {}
    t = threading.Thread(target=lambda: result.update(c.step(ep, call("compile"))))
    t.start()
    time.sleep(0.5)  # the compile is running
    assert server.terminate() == 0
    t.join()
    assert result["observation"].startswith("compile: ok")
    by_episode = {t["episode"]: t for t in read_trajectories(server.record)}
    assert by_episode[ep]["end_cause"] == "shutdown" and len(by_episode[ep]["turns"]) == 3
    assert by_episode[idle]["end_cause"] == "shutdown"


def test_kforge_record_appends_the_stream(tmp_path):
    stream = f"ipc://{tmp_path}/stream.sock"
    s = Server(tmp_path, record=False, stream=stream)
    out = tmp_path / "recorded.h5"
    rec = subprocess.Popen([KFORGE, "record", "--connect", stream, "--out", str(out), "--count", "2"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        c = Client(s.endpoint)
        eps = []
        for i in range(2):
            ep = c.reset("transpose_add", seed=i)["episode"]
            c.step(ep, write("a.md", str(i)))
            c.close_episode(ep)
            eps.append(ep)
        stdout, stderr = rec.communicate(timeout=30)
        assert rec.returncode == 0, stderr
        assert "2 trajectories recorded" in stdout
        assert [t["episode"] for t in read_trajectories(str(out))] == eps
    finally:
        rec.kill()
        s.stop()


def elapsed(fn, *args, **kwargs):
    """(seconds fn took, the exception it raised)."""
    t0 = time.monotonic()
    try:
        fn(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - returned to the test
        return time.monotonic() - t0, e
    return time.monotonic() - t0, None


def test_timeouts_are_wall_clock_bounds_on_a_dead_port():
    dead = dead_endpoint()
    with Client(dead) as c:
        took, err = elapsed(c.health, timeout=1)
        assert isinstance(err, ServerUnavailable) and 0.9 < took < 1.5, (took, err)
        assert f"no reply to health from {dead}" in str(err) and "attempt(s)" in str(err)
        took, err = elapsed(c.reset, "softmax_rows", timeout=1)  # not resent, still bounded
        assert isinstance(err, ServerUnavailable) and took < 1.5 and "not resent" in str(err), (took, err)
        took, err = elapsed(c.wait_ready, timeout=3)
        assert isinstance(err, ServerUnavailable) and 2.9 < took < 3.5, (took, err)
        assert f"no kforge server answered health at {dead} within 3 s" in str(err)
    with Client(dead, timeout=1) as c:  # the client's own timeout bounds every call the same way
        took, err = elapsed(c.health)
        assert isinstance(err, ServerUnavailable) and took < 1.5, (took, err)

    async def async_bounds():
        async with AsyncClient(dead, timeout=1) as c:
            out = [await async_elapsed(c.health()), await async_elapsed(c.reset("softmax_rows"))]
            return out + [await async_elapsed(c.wait_ready(timeout=2))]

    (t_health, e_health), (t_reset, e_reset), (t_ready, e_ready) = asyncio.run(async_bounds())
    assert isinstance(e_health, ServerUnavailable) and 0.9 < t_health < 1.5, (t_health, e_health)
    assert isinstance(e_reset, ServerUnavailable) and t_reset < 1.5, (t_reset, e_reset)
    assert isinstance(e_ready, ServerUnavailable) and 1.9 < t_ready < 2.5, (t_ready, e_ready)


async def async_elapsed(coro):
    t0 = time.monotonic()
    try:
        await coro
    except Exception as e:  # noqa: BLE001 - returned to the test
        return time.monotonic() - t0, e
    return time.monotonic() - t0, None


def test_kernel_env_checks_the_server_on_construction(server):
    took, err = elapsed(KernelEnv, dead_endpoint(), task="softmax_rows", check_timeout=1)
    assert isinstance(err, ServerUnavailable) and took < 1.5, (took, err)
    assert "KernelEnv: no kforge server answered at tcp://127.0.0.1:" in str(err) and "kforge serve" in str(err)
    with KernelEnv(server.endpoint, task="softmax_rows") as env:
        assert env.server_health["status"] == "ok" and env.server_health["gpus"] == []


def test_busy_retries_are_bounded_by_busy_timeout(tmp_path):
    s = Server(tmp_path, record=False, sessions={"max_episodes": 1})
    try:
        assert Client(s.endpoint).busy_timeout == 10.0 and AsyncClient(s.endpoint).busy_timeout == 10.0
        c = Client(s.endpoint, busy_timeout=1.0)
        c.reset("softmax_rows")
        took, err = elapsed(c.reset, "softmax_rows")
        assert isinstance(err, KforgeError) and err.kind == "busy" and 0.9 < took < 2.0, (took, err)
        assert "still busy after" in err.message and "busy_timeout 1 s" in err.message, err.message
        took, err = elapsed(c.call, "reset", busy_timeout=0.3, task="softmax_rows")  # per call
        assert err.kind == "busy" and 0.25 < took < 1.0, (took, err)
        took, err = elapsed(c.call, "reset", timeout=0.5, busy_timeout=30, task="softmax_rows")  # the timeout wins
        assert err.kind == "busy" and took < 0.9, (took, err)

        async def async_busy():
            async with AsyncClient(s.endpoint, busy_timeout=1.0) as ac:
                return await async_elapsed(ac.reset("softmax_rows"))

        took, err = asyncio.run(async_busy())
        assert isinstance(err, KforgeError) and err.kind == "busy" and 0.9 < took < 2.0, (took, err)
    finally:
        s.stop()


def test_gpu_tools_without_a_gpu_lane_say_no_gpu_and_the_episode_goes_on(server):
    assert "no GPU lanes (scheduler.gpus is 0); verify, profile and submit answer no_gpu" in server.line, server.line
    with KernelEnv(server.endpoint, task="gelu_scale_residual") as env:
        env.reset(seed=1, options={"max_turns": 10})
        env.step(write("kernel.cu", candidate("kernel.cu")))
        env.step(write("launch.yaml", candidate("launch.yaml")))
        for name in ("verify", "profile", "submit"):
            obs, reward, term, trunc, info = env.step(call(name))
            assert obs.startswith(f"{name}: not run (no_gpu): nothing was judged"), obs
            assert info["report"]["harness_error"]["kind"] == "no_gpu" and info["tool_ok"] is False
            assert not term and not trunc and reward == 0


def test_malformed_actions_never_raise_in_kernel_env(server):
    """tools/python/README.md: a malformed action costs its turn and an `error: ` observation, even
    the JSON that gave `internal` (1e999) or crashed the server (150 000 nested '[') before issue 26."""
    deep = "[" * 150000 + "]" * 150000
    actions = [
        '<tool_call>{"name": "compile", "arguments": {"x": 1e999}}</tool_call>',
        {"type": "function", "function": {"name": "read_file", "arguments": '{"path": 1e999}'}},
        '<tool_call>{"name": "compile", "arguments": ' + deep + "}</tool_call>",
        {"name": "write_file", "arguments": '{"path": "a.cu", "path": "b.cu", "content": "x"}'},
        '<think><tool_call>{"name": "submit", "arguments": {}}</tool_call></think>',
    ]
    with KernelEnv(server.endpoint, task="gelu_scale_residual") as env:
        env.reset(seed=1, options={"max_turns": 10})
        for action in actions:
            obs, reward, term, trunc, info = env.step(action)
            assert obs.startswith("error: "), obs[:300]
            assert not term and not trunc
        assert info["turn"] == len(actions)


def serve_fails(args, cwd=None):
    """`kforge serve ARGS` that must fail at start-up: its output, with no SIGTERM line in it."""
    r = subprocess.run([KFORGE, "serve", *args], capture_output=True, text=True, timeout=120, cwd=cwd)
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert "SIGTERM" not in out and "SIGINT" not in out and "listening on" not in out, out
    return out


def test_start_up_failures_say_what_failed_and_no_phantom_sigterm(tmp_path):
    import socket
    config = tmp_path / "cpu.yaml"
    config.write_text(json.dumps({"scheduler": {"gpus": 0, "compile_workers": 1}}))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        endpoint = f"tcp://127.0.0.1:{taken.getsockname()[1]}"
        out = serve_fails(["--config", str(config), "--bind", endpoint])
    assert f"kforge: io_error: cannot bind the server socket to '{endpoint}'" in out and "--bind picks another" in out, out
    out = serve_fails(["--config", str(config), "--bind", "tcp://127.0.0.1:notaport"])
    assert "cannot bind the server socket to 'tcp://127.0.0.1:notaport'" in out and "endpoints look like" in out, out
    # A copy of the shipped config elsewhere: its relative paths resolve against the copy's folder.
    copied = tmp_path / "copied"
    copied.mkdir()
    with open(os.path.join(SOURCE_DIR, "configs", "server.yaml")) as f:
        (copied / "server.yaml").write_text(f.read())
    for args, cwd in ((["--config", str(copied / "server.yaml")], None), (["--config", "server.yaml"], str(copied))):
        out = serve_fails(args, cwd=cwd)
        assert (f"kforge: io_error: env_config: the file {copied / 'env.yaml'} does not exist (relative paths in "
                f"{copied / 'server.yaml'} resolve against its folder, {copied})") in out, out
    out = serve_fails(["--config", str(tmp_path / "nope.yaml")])
    assert f"{tmp_path / 'nope.yaml'}: cannot open file (No such file or directory)" in out, out


def test_start_up_line_says_plainly_which_gpus_were_found(tmp_path):
    s = Server(tmp_path, record=False, scheduler={"gpus": -1})
    try:
        line = s.line
        gpus = Client(s.endpoint).health()["gpus"]
    finally:
        s.stop()
    if gpus:
        assert re.search(r"; %d GPU lanes?: GPU 0 %s" % (len(gpus), re.escape(gpus[0]["name"])), line), line
    else:
        assert "; no GPU lanes: no GPU is " in line and "verify, profile and submit answer no_gpu" in line, line
        if not os.path.exists("/proc/driver/nvidia/version") and not os.path.exists("/dev/nvidiactl"):
            assert "no NVIDIA driver is loaded on this machine" in line and "insufficient" not in line, line


def test_health_says_which_gpu_models_the_tasks_baselines_were_measured_on(tmp_path):
    # The samples' torch.compile baselines were measured on an H200 (issue 32): health counts them by
    # GPU model against each model judging here (none on a machine without GPUs: no note then).
    with open(os.path.join(SOURCE_DIR, "datasets", "samples", "gelu_scale_residual.yaml")) as f:
        named = re.search(r'^  gpu: "(.+)"$', f.read(), re.M).group(1)
    s = Server(tmp_path, record=False, scheduler={"gpus": -1})
    try:
        with Client(s.endpoint) as c:
            health, listed = c.health(), c.tasks(source="samples", limit=1000)["tasks"]
    finally:
        s.stop()
    b = health["baselines"]
    with_compile = sum(t["compile_ms"] is not None for t in listed)
    assert with_compile > 0 and b["torch_compile_by_gpu"].get(named, 0) > 0, b
    assert sum(b["torch_compile_by_gpu"].values()) == with_compile, (b, with_compile)
    assert b["without_torch_compile"] == len(listed) - with_compile, b
    assert b["other_gpu"] == "refuse"
    assert [j["gpu"] for j in b["judging"]] == sorted({g["name"] for g in health["gpus"]}), b
    for j in b["judging"]:
        assert j["its_own"] + j["other_gpus"] + j["unnamed"] == with_compile, j
        assert j["its_own"] == b["torch_compile_by_gpu"].get(j["gpu"], 0), j
    if not health["gpus"]:
        assert b["judging"] == [] and b["note"] is None, b
    elif any(j["other_gpus"] for j in b["judging"]):
        assert "give no tier 3 here (reward.compile_baseline.other_gpu: refuse" in b["note"], b
    assert b["overlay"] is None, b  # no tasks.baselines
    # With `kforge baseline`'s folder (tasks.baselines) that holds no merge of the model judging here.
    folder = tmp_path / "baselines"
    (folder / "some-other-gpu__torch-2.11.0__cuda-13.0").mkdir(parents=True)
    (tmp_path / "with_overlay").mkdir()
    s = Server(tmp_path / "with_overlay", record=False, scheduler={"gpus": -1}, tasks={"baselines": str(folder)})
    try:
        with Client(s.endpoint) as c:
            o = c.health()["baselines"]["overlay"]
    finally:
        s.stop()
    assert o["folder"] == str(folder) and o["key"] is None and o["rows"] == 0, o
    models = sorted({g["name"] for g in health["gpus"]})
    if not models:
        assert o["note"] == "no GPU judges here: no model's baselines taken", o
    elif len(models) == 1:
        assert o["note"].startswith(f"no merged baselines of {models[0]} in {folder}"), o


def test_package_version_program_name_and_ignored_build_outputs():
    import kforge_client
    assert re.fullmatch(r"\d+\.\d+\.\d+", kforge_client.__version__), kforge_client.__version__
    import warnings
    from setuptools.config.pyprojecttoml import read_configuration
    with warnings.catch_warnings():  # "[tool.setuptools] in pyproject.toml is still beta"
        warnings.simplefilter("ignore")
        project = read_configuration(os.path.join(SOURCE_DIR, "tools", "python", "pyproject.toml"))["project"]
    assert project["version"] == kforge_client.__version__  # pyproject.toml reads it from the package
    from kforge_client.evaluate import PROG
    assert PROG == "kforge-evaluate"
    if subprocess.run(["git", "-C", SOURCE_DIR, "rev-parse"], capture_output=True).returncode != 0:
        pytest.skip("not a git checkout")
    paths = ["tools/python/build/lib/kforge_client/client.py", "tools/python/kforge_client.egg-info/PKG-INFO"]
    r = subprocess.run(["git", "-C", SOURCE_DIR, "check-ignore", *paths], capture_output=True, text=True)
    assert r.stdout.split() == paths, r.stdout + r.stderr
