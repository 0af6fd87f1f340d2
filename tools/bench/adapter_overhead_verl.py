#!/usr/bin/env python3
"""Per-step overhead of the trainer adapters over the raw client, on the same scripted episode.

One `kforge serve` (started here, no GPU lane) and one scripted episode played again and again:
write_file, read_file, list_files (front-thread tools, so the server's time is small and steady).
Each way plays the same actions on its own episodes, the ways interleaved step by step so load
drifts hit them alike:
- raw: `AsyncEpisode.step` (the AsyncClient the adapters use);
- verl: a model tool call through verl's own `ToolAgentLoop._call_tool` (create, execute with
  agent_data, release, the ToolResponse) on `KforgeTool`s loaded by verl's loader;
- verifiers: `KforgeEnv.env_response` for an assistant message with that tool call (the step and
  the tool message; the model call is the trainer's, not measured).
Figures: per-way median step time, and each adapter's median overhead (its median minus raw's), in
ms; the goal is under 1 ms per step. With --json, a record in tools/bench/results/.

    tools/bench/adapter_overhead_verl.py --kforge build/tools/kforge --steps 3000 [--json]
"""
import argparse
import asyncio
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools", "python"))
sys.path.insert(0, os.path.dirname(__file__))
from kforge_client import AsyncClient  # noqa: E402
import results_doc  # noqa: E402

ACTIONS = [("write_file", {"path": "notes.md", "content": "x" * 2048}), ("read_file", {"path": "notes.md"}),
           ("list_files", {})]
TASK = "softmax_rows"
EPISODE_TURNS = 200  # steps per episode before a fresh one (kforge's max_turns is set above it)


def start_server(kforge, folder):
    """A `kforge serve` without GPU lanes (front-thread and compile actions) in `folder`: (process,
    endpoint); tools/bench/adapter_overhead.py starts its server with it too."""
    config = os.path.join(folder, "server.yaml")
    with open(config, "w") as f:
        json.dump({"scheduler": {"gpus": 0, "compile_workers": 1}}, f)
    endpoint = f"ipc://{folder}/kforge.sock"
    proc = subprocess.Popen([kforge, "serve", "--config", config, "--bind", endpoint], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    line = proc.stdout.readline()
    if not line.startswith("kforge serve: listening on"):
        sys.exit(f"{os.path.basename(sys.argv[0])}: the server did not start: {line}")
    print(line.strip())
    return proc, endpoint


class Raw:
    name = "raw"

    def __init__(self, endpoint):
        self.client, self.ep = AsyncClient(endpoint), None

    async def step(self, i, action):
        if i % EPISODE_TURNS == 0:
            if self.ep:
                await self.ep.close()
            self.ep = await self.client.reset(TASK, options={"max_turns": EPISODE_TURNS + 1})
        await self.ep.step({"name": action[0], "arguments": action[1]})


class Verl:
    name = "verl"

    def __init__(self, endpoint):
        from verl.experimental.agent_loop.tool_agent_loop import AgentData, ToolAgentLoop
        from verl.experimental.agent_loop.tool_parser import FunctionCall
        from verl.tools.tool_registry import initialize_tools_from_config
        from kforge_client.adapters import verl_tool
        os.environ["KFORGE_ENDPOINT"] = endpoint
        sys.stdout, saved = open(os.devnull, "w"), sys.stdout  # verl's BaseTool prints every schema
        try:
            tools = initialize_tools_from_config(os.path.join(ROOT, "tools", "python", "examples", "verl_tool_config.yaml"))
        finally:
            sys.stdout = saved
        self.loop = object.__new__(ToolAgentLoop)
        self.loop.tools = {t.name: t for t in tools}
        self.loop.max_tool_response_length, self.loop.tool_response_truncate_side = 100000, "middle"
        self.AgentData, self.FunctionCall, self.verl_tool, self.data = AgentData, FunctionCall, verl_tool, None
        self.calls = {a[0]: FunctionCall(name=a[0], arguments=json.dumps(a[1])) for a in ACTIONS}

    async def step(self, i, action):
        if i % EPISODE_TURNS == 0:
            if self.data:
                await self.verl_tool.compute_score(extra_info=dict(self.data.extra_fields))
            create = {"create_kwargs": {"task": TASK, "options": {"max_turns": EPISODE_TURNS + 1}}}
            self.data = self.AgentData([], None, None, None, None, {}, f"bench-{i}", {n: create for n in self.loop.tools})
        await self.loop._call_tool(self.calls[action[0]], self.data.tools_kwargs, self.data)


class Verifiers:
    name = "verifiers"

    def __init__(self, endpoint):
        from verifiers.types import AssistantMessage, ToolCall
        from kforge_client.adapters.verifiers_env import KforgeEnv
        self.env = KforgeEnv(endpoint, [TASK], max_turns=EPISODE_TURNS + 1)
        self.messages = {a[0]: [AssistantMessage(tool_calls=[ToolCall(id="c", name=a[0], arguments=json.dumps(a[1]))])]
                         for a in ACTIONS}
        self.state = None

    async def step(self, i, action):
        if i % EPISODE_TURNS == 0:
            if self.state:
                await self.env.close_episode(self.state)
            row = self.env.get_dataset()[0]
            from verifiers.types import UserMessage
            self.state = {"info": dict(row["info"]), "trajectory_id": f"bench-{i}", "prompt": [UserMessage(content="x")]}
            await self.env.setup_state(self.state)
        await self.env.env_response(self.messages[action[0]], self.state)


async def measure(ways, steps):
    times = {w.name: [] for w in ways}
    for i in range(steps):
        action = ACTIONS[i % len(ACTIONS)]
        for w in ways:
            t0 = time.perf_counter()
            await w.step(i, action)
            times[w.name].append((time.perf_counter() - t0) * 1000.0)
    return times


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kforge", default=os.path.join(ROOT, "build", "tools", "kforge"))
    ap.add_argument("--steps", type=int, default=3000, help="steps per way (after --warmup)")
    ap.add_argument("--warmup", type=int, default=300)
    ap.add_argument("--json", action="store_true", help="write a record to tools/bench/results/")
    ap.add_argument("--only", choices=("verl", "verifiers"),
                    help="time one adapter beside the raw client (where the other's package cannot be installed)")
    args = ap.parse_args()
    names = [args.only] if args.only else ["verl", "verifiers"]
    folder = tempfile.mkdtemp(prefix="kforge-adapter-bench-")
    proc, endpoint = start_server(args.kforge, folder)
    try:
        ways = [Raw(endpoint)] + [{"verl": Verl, "verifiers": Verifiers}[n](endpoint) for n in names]

        async def run():  # one event loop: the clients are bound to theirs
            await measure(ways, args.warmup)
            return await measure(ways, args.steps)

        times = asyncio.run(run())
    finally:
        proc.terminate()
        proc.wait(30)
    med = {k: statistics.median(v) for k, v in times.items()}
    figures = {"steps_per_way_count": args.steps}
    for k, v in times.items():
        figures[f"{k}_step_ms_p50"] = round(med[k], 4)
        figures[f"{k}_step_ms_p90"] = round(statistics.quantiles(v, n=10)[-1], 4)
    for k in names:
        figures[f"{k}_overhead_ms_p50"] = round(med[k] - med["raw"], 4)
    for k, v in figures.items():
        print(f"{k:28s} {v}")
    goal = all(figures[f"{k}_overhead_ms_p50"] < 1.0 for k in names)
    print("goal (< 1 ms per step):", "met" if goal else "NOT met")
    if args.json:
        import torch
        date = datetime.datetime.now(datetime.timezone.utc)
        doc = {"gpu": "none (CPU only)", "driver": None, "cuda": torch.version.cuda, "torch": torch.__version__,
               "date": date.isoformat(timespec="seconds"), "commit": results_doc.commit(), "command": " ".join(sys.argv),
               "host_cpus": os.cpu_count(), "figures": figures}
        path = os.path.join(ROOT, "tools", "bench", "results", f"{date:%Y-%m-%d}_adapter_overhead_verl_cpu.json")
        results_doc.write(path, doc, "adapter_overhead_verl")


if __name__ == "__main__":
    main()
