#!/usr/bin/env python3
"""Per-step overhead of the trainer adapters against the raw client (goal: under 1 ms a step).

Starts `kforge serve` (no GPU lanes, one compile worker) and plays the same scripted episode through
each way of stepping: the raw `Client.step`; `KernelEnv`; `KernelGymEnv` direct and through
`gymnasium.make` (its PassiveEnvChecker and OrderEnforcing wrappers); the SkyRL `KforgeTextEnv`;
and, over asyncio, the raw `AsyncEpisode.step` against `KernelVectorEnv` with one sub-environment.
Every action is a front-thread one (write_file, list_files, read_file, a malformed call: what
costs the server least, so what is left is the client side), sent as the assistant text an LLM
writes. Episodes of each way are interleaved, round after round, so drift hits all alike. Prints
the median step time of each way and its overhead over the raw one it wraps; --json writes a
record to tools/bench/results/ (tools/bench/RESULTS.md).

    .venv/bin/python tools/bench/adapter_overhead.py --kforge build/tools/kforge --rounds 30
"""
import argparse
import asyncio
import datetime
import json
import os
import statistics
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools", "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gymnasium  # noqa: E402
import results_doc  # noqa: E402
from adapter_overhead_verl import start_server  # noqa: E402  (verl is imported only when its way runs)
from kforge_client import AsyncClient, Client, KernelEnv  # noqa: E402
from kforge_client.adapters.gymnasium_env import ENV_ID, KernelGymEnv  # noqa: E402
from kforge_client.adapters.gymnasium_vector import KernelVectorEnv  # noqa: E402
from kforge_client.adapters.skyrl_env import KforgeTextEnv  # noqa: E402

CAND = os.path.join(ROOT, "datasets", "samples", "candidates", "gelu_scale_residual", "fused")
TASK = "gelu_scale_residual"


def episode_actions(steps):
    calls = []
    for name in ("kernel.cu", "launch.yaml"):
        with open(os.path.join(CAND, name)) as f:
            calls.append({"name": "write_file", "arguments": {"path": name, "content": f.read()}})
    calls += [{"name": "list_files", "arguments": {}}, {"name": "read_file", "arguments": {"path": "kernel.cu"}}]
    texts = ["<tool_call>" + json.dumps(c) + "</tool_call>" for c in calls] + ["no tool call in this turn"]
    return [texts[i % len(texts)] for i in range(steps)]


def timed_steps(step, actions):
    out = []
    for a in actions:
        t = time.perf_counter()
        step(a)
        out.append((time.perf_counter() - t) * 1000)
    return out


def play_sync(endpoint, way, actions, seed):
    """One episode stepped the given way; the step times (ms)."""
    options = {"max_turns": len(actions) + 1}
    if way == "raw_client":
        with Client(endpoint) as c:
            ep = c.reset(TASK, seed=seed, options=options)["episode"]
            times = timed_steps(lambda a: c.step(ep, a), actions)
            c.close_episode(ep)
            return times
    if way == "skyrl":
        env = KforgeTextEnv({"endpoint": endpoint}, {"task": TASK, "seed": seed, "max_turns": len(actions) + 1})
        env.init([])
        times = timed_steps(env.step, actions)
        env.close()
        return times
    env = {"kernel_env": lambda: KernelEnv(endpoint, task=TASK),
           "gym_direct": lambda: KernelGymEnv(endpoint, task=TASK),
           "gym_make": lambda: gymnasium.make(ENV_ID, endpoint=endpoint, task=TASK)}[way]()
    env.reset(seed=seed, options=options)
    times = timed_steps(env.step, actions)
    env.close()
    return times


def play_async(endpoint, way, actions, seed):
    options = {"max_turns": len(actions) + 1}
    if way == "vector_1":
        envs = KernelVectorEnv(1, endpoint=endpoint, task=TASK)
        envs.reset(seed=seed, options=options)
        times = timed_steps(lambda a: envs.step([a]), actions)
        envs.close()
        return times
    loop = asyncio.new_event_loop()

    async def open_episode(client):
        client.connect()
        return await client.reset(TASK, seed=seed, options=options)
    client = AsyncClient(endpoint)
    ep = loop.run_until_complete(open_episode(client))
    times = timed_steps(lambda a: loop.run_until_complete(ep.step(a)), actions)
    loop.run_until_complete(ep.close())
    loop.run_until_complete(client.aclose())
    loop.close()
    return times


WAYS = {"raw_client": play_sync, "kernel_env": play_sync, "gym_direct": play_sync, "gym_make": play_sync,
        "skyrl": play_sync, "raw_async": play_async, "vector_1": play_async}
BASE = {"kernel_env": "raw_client", "gym_direct": "raw_client", "gym_make": "raw_client", "skyrl": "raw_client",
        "vector_1": "raw_async"}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kforge", default=os.path.join(ROOT, "build", "tools", "kforge"))
    ap.add_argument("--rounds", type=int, default=30, help="episodes per way, interleaved")
    ap.add_argument("--steps", type=int, default=20, help="steps per episode")
    ap.add_argument("--json", action="store_true", help="write tools/bench/results/adapter_overhead_*.json")
    args = ap.parse_args()

    proc, endpoint = start_server(args.kforge, tempfile.mkdtemp(prefix="kforge_adapter_bench_"))
    actions = episode_actions(args.steps)
    times = {way: [] for way in WAYS}
    try:
        for r in range(args.rounds + 1):  # round 0 warms up every way and is not counted
            for way, play in WAYS.items():
                t = play(endpoint, way, actions, seed=r)
                if r:
                    times[way] += t
    finally:
        proc.terminate()
        proc.wait(60)

    figures = {"steps_per_way_count": args.rounds * args.steps}
    print(f"{'way':12s} {'median ms':>10s} {'p90 ms':>8s} {'overhead ms':>12s}  (over)")
    for way, t in times.items():
        median = statistics.median(t)
        figures[f"{way}_step_ms_p50"] = median
        figures[f"{way}_step_ms_p90"] = statistics.quantiles(t, n=10)[-1]
        line = f"{way:12s} {median:10.3f} {figures[f'{way}_step_ms_p90']:8.3f}"
        if way in BASE:
            figures[f"{way}_overhead_ms"] = median - statistics.median(times[BASE[way]])
            line += f" {figures[f'{way}_overhead_ms']:12.3f}  ({BASE[way]})"
        print(line)
    command = " ".join([".venv/bin/python", "tools/bench/adapter_overhead.py"] + sys.argv[1:])
    print(f"reproduce: {command}")
    if args.json:
        doc = {"gpu": "none (CPU run)", "driver": None, "cuda": None, "torch": None,
               "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
               "commit": results_doc.commit(), "command": command, "host_cpus": os.cpu_count(),
               "details": {"versions": {"gymnasium": gymnasium.__version__}}, "figures": figures}
        name = f"adapter_overhead_cpu_{datetime.date.today().isoformat()}.json"
        results_doc.write(os.path.join(ROOT, "tools", "bench", "results", name), doc, "adapter_overhead")


if __name__ == "__main__":
    main()
