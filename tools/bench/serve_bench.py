#!/usr/bin/env python3
"""Load benchmark of `kforge serve`: N concurrent episodes doing non-GPU actions (write_file,
list_files, read_file), or with --gpu, verify/profile/submit of a passing candidate on every GPU.

Starts the server itself (its own config: no GPU lanes unless --gpu, one compile worker), opens
--episodes episodes from one asyncio client, then runs --rounds rounds in which every episode
does one action at a time, all episodes concurrently. Prints figures and, with --json, writes the
result file tools/bench/results/*.json (ARCHITECTURE.md, Tests and benchmarks).

    tools/bench/serve_bench.py --kforge build/tools/kforge --episodes 1024 --rounds 8 --json
    tools/bench/serve_bench.py --kforge build/tools/kforge --gpu --episodes 64 --rounds 3 --json   # on a GPU host
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
from kforge_client import AsyncClient  # noqa: E402
import results_doc  # noqa: E402

CAND = os.path.join(ROOT, "datasets", "samples", "candidates", "gelu_scale_residual", "fused")


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def pct(values, q):
    v = sorted(values)
    return v[min(len(v) - 1, int(q / 100 * len(v)))]


def read(name):
    with open(os.path.join(CAND, name)) as f:
        return f.read()


async def run(args, endpoint, pid):
    kernel, plan = read("kernel.cu"), read("launch.yaml")
    lat = {k: [] for k in ("reset", "single_list_files", "write_file", "list_files", "read_file", "verify", "profile", "submit")}
    speedups = []

    async def timed(kind, coro):
        t = time.perf_counter()
        r = await coro
        lat[kind].append((time.perf_counter() - t) * 1000)
        return r

    async with AsyncClient(endpoint, timeout=3600) as c:
        health0 = await c.health()
        rss0 = rss_kib(pid)
        eps = await asyncio.gather(*[timed("reset", c.reset(args.task, seed=i, options={"max_turns": 1000}))
                                     for i in range(args.episodes)])
        rss_open = rss_kib(pid)
        t0 = time.perf_counter()

        async def cpu_round(ep, r):
            await timed("write_file", ep.step({"name": "write_file", "arguments": {"path": "kernel.cu", "content": kernel}}))
            await timed("list_files", ep.step({"name": "list_files", "arguments": {}}))
            await timed("read_file", ep.step({"name": "read_file", "arguments": {"path": "kernel.cu"}}))

        async def gpu_round(ep, r):
            if r == 0:
                await ep.step({"name": "write_file", "arguments": {"path": "kernel.cu", "content": kernel}})
                await ep.step({"name": "write_file", "arguments": {"path": "launch.yaml", "content": plan}})
            tool = "submit" if r == args.rounds - 1 else ("profile" if r % 2 else "verify")
            obs, reward, term, trunc, info = await timed(tool, ep.step({"name": tool, "arguments": {}}))
            sp = (((info.get("report") or {}).get("timing") or {}).get("speedup") or {}).get("point")
            if sp:
                speedups.append((tool, sp))

        for r in range(args.rounds):
            await asyncio.gather(*[(gpu_round if args.gpu else cpu_round)(ep, r) for ep in eps])
        wall = time.perf_counter() - t0
        rss_after = rss_kib(pid)
        # One episode alone, one request at a time: the round trip without queueing behind the others
        # (a fresh one: with --gpu every episode above has submitted, which ends it).
        solo = await c.reset(args.task, seed=args.episodes, options={"max_turns": 1000})
        lat["single_list_files"] = []
        for _ in range(200):
            await timed("single_list_files", solo.step({"name": "list_files", "arguments": {}}))
        await solo.close()
        health = await c.health()
        await asyncio.gather(*[ep.close() for ep in eps])
    return lat, speedups, wall, rss0, rss_open, rss_after, health0, health


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kforge", default=os.path.join(ROOT, "build", "tools", "kforge"))
    ap.add_argument("--episodes", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--task", default="gelu_scale_residual")
    ap.add_argument("--gpu", action="store_true", help="GPU actions (verify/profile/submit) on every visible GPU")
    ap.add_argument("--json", action="store_true", help="write tools/bench/results/serve_bench_*.json")
    args = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="kforge_serve_bench_")
    endpoint = f"ipc://{tmp}/s.sock"
    config = {"scheduler": {"gpus": -1 if args.gpu else 0, "compile_workers": 2, "max_gpu_queue": 100000},
              "sessions": {"max_episodes": max(4096, args.episodes)},
              "record": {"path": os.path.join(tmp, "t.h5")}}
    with open(os.path.join(tmp, "server.yaml"), "w") as f:
        json.dump(config, f)
    proc = subprocess.Popen([args.kforge, "serve", "--config", os.path.join(tmp, "server.yaml"), "--bind", endpoint],
                            stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    print(line.strip())
    try:
        lat, speedups, wall, rss0, rss_open, rss_after, h0, h = asyncio.run(run(args, endpoint, proc.pid))
    finally:
        proc.terminate()
        proc.wait(60)

    figures = {"episodes_count": args.episodes, "rounds_count": args.rounds,
               "server_rss_idle_mib": rss0 / 1024, "server_rss_open_mib": rss_open / 1024,
               "server_rss_after_mib": rss_after / 1024,
               "server_memory_per_episode_kib": (rss_after - rss0) / args.episodes,
               "server_memory_per_open_episode_kib": (rss_open - rss0) / args.episodes}
    for kind, v in lat.items():
        if v:
            figures[f"{kind}_latency_ms_p50"] = pct(v, 50)
            figures[f"{kind}_latency_ms_p99"] = pct(v, 99)
    steps = sum(len(v) for k, v in lat.items() if k not in ("reset", "single_list_files"))
    figures["steps_per_s"] = steps / wall
    if args.gpu:
        gpu_steps = sum(len(lat[k]) for k in ("verify", "profile", "submit"))
        figures["gpu_steps_per_min"] = gpu_steps / wall * 60
        figures["verifies_per_min"] = len(lat["verify"]) / wall * 60
        # Timing under load against the A/A figures (RESULTS.md: one candidate timed in 30 separate
        # requests on an idle worker): per tool, the spread (max - min) / median and the largest
        # deviation from the median of the requests' speedups.
        for tool in ("profile", "submit"):
            v = [sp for t, sp in speedups if t == tool]
            if len(v) > 1:
                m = statistics.median(v)
                figures[f"{tool}_speedup_count"] = len(v)
                figures[f"{tool}_speedup_median_under_load"] = m
                figures[f"{tool}_speedup_spread_pct_under_load"] = (max(v) - min(v)) / m * 100
                figures[f"{tool}_speedup_max_dev_pct_under_load"] = max(abs(x - m) for x in v) / m * 100
    for k, v in figures.items():
        print(f"{k:40s} {v:12.3f}")

    if args.json:
        def sh(cmd):
            try:
                return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=30).stdout.strip()
            except Exception:
                return ""
        gpu = sh("nvidia-smi --query-gpu=name --format=csv,noheader | head -1") or "none (CPU run)"
        result = {"gpu": gpu, "driver": sh("nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1") or None,
                  "cuda": sh(f"{sys.executable} -c 'import torch; print(torch.version.cuda)'") or None,
                  "torch": sh(f"{sys.executable} -c 'import torch; print(torch.__version__)'") or None,
                  "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                  "commit": results_doc.commit(),
                  "command": " ".join(sys.argv), "host_cpus": os.cpu_count(), "figures": figures}
        name = f"serve_bench_{'gpu' if args.gpu else 'cpu'}_{datetime.date.today().isoformat()}.json"
        results_doc.write(os.path.join(ROOT, "tools", "bench", "results", name), result, "serve_bench")


if __name__ == "__main__":
    main()
