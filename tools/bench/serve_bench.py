#!/usr/bin/env python3
"""Load benchmark of `kforge serve`: N concurrent episodes doing non-GPU actions (write_file,
list_files, read_file), or with --gpu, verify/profile/submit of a passing candidate on every GPU.

The episodes' (task, candidate) pairs: --task with the gelu_scale_residual candidate `fused` (the
default), or --pairs: `samples` (every stored candidate of the sample tasks whose expect.yaml says
`pass`: datasets/samples/candidates/, 13 tasks across operator families, naive to fused), or a file
of `TASK CANDIDATE_DIR` lines (# comments); episode i takes pair i mod their count. With --gpu the
reports' phases are summed per tool (the candidate's and the reference's GPU time, the harness's GPU
work, the timing stage and its checks, the worker's load and verify stages; the other shapes' trials
and the request's round trip from the report) and set against the GPU lanes' time (wall x GPUs): where lane
time goes under load (issue 31), and the judged candidates (episodes, each ending with a submit) per
GPU-hour.

Starts the server itself (its own config: no GPU lanes unless --gpu, one compile worker), opens
--episodes episodes from one asyncio client, then runs --rounds rounds in which every episode
does one action at a time, all episodes concurrently. Prints figures and, with --json, writes the
result file tools/bench/results/*.json (ARCHITECTURE.md, Tests and benchmarks).

    tools/bench/serve_bench.py --kforge build/tools/kforge --episodes 1024 --rounds 8 --json
    tools/bench/serve_bench.py --kforge build/tools/kforge --gpu --episodes 64 --rounds 3 --json   # on a GPU host
    tools/bench/serve_bench.py --gpu --pairs samples --episodes 64 --rounds 2 --json   # verify + submit per candidate
    tools/bench/serve_bench.py --gpu --pairs samples --sequential off --label fixed --json   # the old lane timing, beside it
    tools/bench/serve_bench.py --gpu --pairs samples --fresh-sources on --sequential off --warm off --label old --json
    tools/bench/serve_bench.py --gpu --pairs samples --fresh-sources on --label new --json   # old and new lane settings

--fresh-sources on writes a new source before every GPU step, so that each judged candidate is
compiled as it is in training; --warm (scheduler.warm_compiles) chooses where that compile runs;
the figures then include the compiles' share of the lanes' time and their cache hits.
"""
import argparse
import asyncio
import datetime
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools", "python"))
from kforge_client import AsyncClient  # noqa: E402
import results_doc  # noqa: E402

CANDIDATES = os.path.join(ROOT, "datasets", "samples", "candidates")
CAND = os.path.join(CANDIDATES, "gelu_scale_residual", "fused")
# A report's phases summed per tool (env/evaluator/EVAL_REPORT.md, `phases`).
PHASES = ("verify_candidate_gpu_ms", "verify_reference_gpu_ms", "verify_harness_gpu_ms", "time_ms", "timed_checks_ms", "worker_ms",
          "load_ms", "verify_ms", "robustness_conditioning_ms", "ceilings_ms", "timed_harness_draw_ms", "timed_harness_fingerprint_ms",
          "timed_harness_poison_ms", "timed_harness_compare_ms", "timed_warmup_ms")
# The report's own wall times beside them: the other shapes' trials (separate GPU requests), the GPU
# request's round trip, and the whole evaluation seen by the server.
WALLS = ("shapes_wall_ms", "gpu_request_wall_ms", "wall_ms")


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def pct(values, q):
    v = sorted(values)
    return v[min(len(v) - 1, int(q / 100 * len(v)))]


def read(folder, name):
    with open(os.path.join(folder, name)) as f:
        return f.read()


def load_pairs(spec, task):
    """[(task, candidate folder)]: --pairs `samples`, a file of `TASK CANDIDATE_DIR` lines, or none (--task
    with the default candidate)."""
    if not spec:
        return [(task, CAND)]
    if spec == "samples":
        out = []
        for t in sorted(os.listdir(CANDIDATES)):
            for c in sorted(os.listdir(os.path.join(CANDIDATES, t)) if os.path.isdir(os.path.join(CANDIDATES, t)) else []):
                folder = os.path.join(CANDIDATES, t, c)
                expect = os.path.join(folder, "expect.yaml")
                if os.path.isfile(expect) and re.search(r"^verdict:\s*pass\b", read(folder, "expect.yaml"), re.M):
                    out.append((t, folder))
        return out
    out = []
    with open(spec) as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            if len(parts) != 2 or not os.path.isfile(os.path.join(parts[1], "kernel.cu")):
                sys.exit(f"serve_bench: {spec}:{n}: expected `TASK CANDIDATE_DIR` with a kernel.cu in the folder, got {line!r}")
            out.append((parts[0], parts[1]))
    if not out:
        sys.exit(f"serve_bench: {spec}: no pairs")
    return out


def eval_config(tmp, sequential):
    """A copy of configs/eval.yaml with timing.sequential set (the server reads it by absolute path)."""
    text = read(os.path.join(ROOT, "configs"), "eval.yaml")
    new, n = re.subn(r"^(  sequential:\s*)(true|false)\b", lambda m: m.group(1) + ("true" if sequential else "false"), text, flags=re.M)
    if n != 1:
        sys.exit("serve_bench: configs/eval.yaml has no single `  sequential: true|false` line under timing")
    path = os.path.join(tmp, "eval.yaml")
    with open(path, "w") as f:
        f.write(new)
    return path


async def run(args, endpoint, pid, pairs):
    files = [(t, read(c, "kernel.cu"), read(c, "launch.yaml")) for t, c in pairs]
    lat = {k: [] for k in ("reset", "single_list_files", "write_file", "list_files", "read_file", "verify", "profile", "submit")}
    speedups, stops = [], []
    phases = {tool: dict.fromkeys(PHASES + WALLS, 0.0) for tool in ("verify", "profile", "submit")}
    compiles = {"ms": 0.0, "count": 0, "cache_hits": 0}  # the GPU steps' compiles, on their lanes

    async def timed(kind, coro):
        t = time.perf_counter()
        r = await coro
        lat[kind].append((time.perf_counter() - t) * 1000)
        return r

    async with AsyncClient(endpoint, timeout=3600) as c:
        health0 = await c.health()
        rss0 = rss_kib(pid)
        eps = await asyncio.gather(*[timed("reset", c.reset(files[i % len(files)][0], seed=i, options={"max_turns": 1000}))
                                     for i in range(args.episodes)])
        own = {id(ep): files[i % len(files)] for i, ep in enumerate(eps)}
        rss_open = rss_kib(pid)
        t0 = time.perf_counter()

        async def cpu_round(ep, r):
            kernel = own[id(ep)][1]
            await timed("write_file", ep.step({"name": "write_file", "arguments": {"path": "kernel.cu", "content": kernel}}))
            await timed("list_files", ep.step({"name": "list_files", "arguments": {}}))
            await timed("read_file", ep.step({"name": "read_file", "arguments": {"path": "kernel.cu"}}))

        async def gpu_round(ep, r):
            _, kernel, plan = own[id(ep)]
            if args.fresh_sources == "on":  # every judged candidate is a new source, as in training
                kernel = f"{kernel}// episode {id(ep)} round {r}\n"
            if r == 0 or args.fresh_sources == "on":
                await ep.step({"name": "write_file", "arguments": {"path": "kernel.cu", "content": kernel}})
            if r == 0:
                await ep.step({"name": "write_file", "arguments": {"path": "launch.yaml", "content": plan}})
            tool = "submit" if r == args.rounds - 1 else ("profile" if r % 2 else "verify")
            obs, reward, term, trunc, info = await timed(tool, ep.step({"name": tool, "arguments": {}}))
            report = info.get("report") or {}
            timing = report.get("timing") or {}
            sp = (timing.get("speedup") or {}).get("point")
            if sp:
                speedups.append((tool, sp))
            n = (timing.get("candidate") or {}).get("n")
            if isinstance(n, int) and timing.get("stop"):  # how many timed pairs the request needed, and why it stopped
                stops.append((tool, n, timing["stop"]))
            compiled = report.get("compile") or {}
            if isinstance(compiled.get("wall_ms"), (int, float)):
                compiles["ms"] += compiled["wall_ms"]
                compiles["count"] += 1
                compiles["cache_hits"] += bool(compiled.get("cache_hit"))
            walls = {"shapes_wall_ms": (report.get("shapes") or {}).get("wall_ms"),
                     "gpu_request_wall_ms": report.get("gpu_request_wall_ms"), "wall_ms": report.get("wall_ms")}
            for k, v in [(k, (report.get("phases") or {}).get(k)) for k in PHASES] + list(walls.items()):
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    phases[tool][k] += v

        for r in range(args.rounds):
            await asyncio.gather(*[(gpu_round if args.gpu else cpu_round)(ep, r) for ep in eps])
        wall = time.perf_counter() - t0
        rss_after = rss_kib(pid)
        # One episode alone, one request at a time: the round trip without queueing behind the others
        # (a fresh one: with --gpu every episode above has submitted, which ends it).
        solo = await c.reset(files[0][0], seed=args.episodes, options={"max_turns": 1000})
        lat["single_list_files"] = []
        for _ in range(200):
            await timed("single_list_files", solo.step({"name": "list_files", "arguments": {}}))
        await solo.close()
        health = await c.health()
        await asyncio.gather(*[ep.close() for ep in eps])
    return lat, speedups, stops, phases, compiles, wall, rss0, rss_open, rss_after, health0, health


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kforge", default=os.path.join(ROOT, "build", "tools", "kforge"))
    ap.add_argument("--episodes", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--task", default="gelu_scale_residual")
    ap.add_argument("--pairs", help="the episodes' (task, candidate) pairs: `samples`, or a file of `TASK CANDIDATE_DIR` lines")
    ap.add_argument("--gpu", action="store_true", help="GPU actions (verify/profile/submit) on every visible GPU")
    ap.add_argument("--sequential", choices=("on", "off"), default="on",
                    help="the lanes' timing: the sequential stopping rule (on, configs/eval.yaml's default) or the fixed "
                         "noise target and budget it replaced (off): old and new lane settings side by side")
    ap.add_argument("--warm", choices=("on", "off"), default="on",
                    help="scheduler.warm_compiles: a queued GPU step's candidate compiled ahead on the compile pool (on, the "
                         "default) or on its GPU lane (off)")
    ap.add_argument("--fresh-sources", choices=("on", "off"), default="off",
                    help="on: every GPU round writes a new source (a comment), so every judged candidate is compiled "
                         "as in training; off: each episode's candidate is written once")
    ap.add_argument("--label", default="", help="appended to the result file's name (side-by-side arms of one run)")
    ap.add_argument("--json", action="store_true", help="write tools/bench/results/serve_bench_*.json")
    args = ap.parse_args()
    if args.label and not re.fullmatch(r"[A-Za-z0-9_.-]+", args.label):
        sys.exit(f"serve_bench: --label takes letters, digits, '_', '.' and '-', not {args.label!r}")
    pairs = load_pairs(args.pairs, args.task)

    tmp = tempfile.mkdtemp(prefix="kforge_serve_bench_")
    endpoint = f"ipc://{tmp}/s.sock"
    config = {"scheduler": {"gpus": -1 if args.gpu else 0, "compile_workers": 2, "max_gpu_queue": 100000,
                            "warm_compiles": args.warm == "on"},
              "sessions": {"max_episodes": max(4096, args.episodes)},
              "record": {"path": os.path.join(tmp, "t.h5")}}
    config["eval_config"] = eval_config(tmp, args.sequential == "on")
    with open(os.path.join(tmp, "server.yaml"), "w") as f:
        json.dump(config, f)
    proc = subprocess.Popen([args.kforge, "serve", "--config", os.path.join(tmp, "server.yaml"), "--bind", endpoint],
                            stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    print(line.strip())
    try:
        lat, speedups, stops, phases, compiles, wall, rss0, rss_open, rss_after, h0, h = asyncio.run(run(args, endpoint, proc.pid, pairs))
    finally:
        proc.terminate()
        proc.wait(60)

    figures = {"sequential": 1 if args.sequential == "on" else 0,  # a number, as the records want
               "warm_compiles": 1 if args.warm == "on" else 0, "fresh_sources": 1 if args.fresh_sources == "on" else 0,
               "episodes_count": args.episodes, "rounds_count": args.rounds, "pairs_count": len(pairs),
               "tasks_count": len({t for t, _ in pairs}),
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
        gpus = max(1, len(h.get("gpus") or []))
        lane_ms = wall * 1000 * gpus
        figures["gpus_count"] = gpus
        figures["judged_candidates_per_gpu_hour"] = args.episodes / (wall / 3600 * gpus)
        # Where the lanes' time went: the kernels (candidate and reference, verification), the harness's
        # GPU work, the timing stage (its timed calls and their checks), and the rest (host work, idle).
        own_ms = sum(p["verify_candidate_gpu_ms"] + p["verify_reference_gpu_ms"] for p in phases.values())
        harness_ms = sum(p["verify_harness_gpu_ms"] for p in phases.values())
        timing_ms = sum(p["time_ms"] for p in phases.values())
        figures["lane_share_kernels_pct"] = own_ms / lane_ms * 100
        figures["lane_share_harness_gpu_pct"] = harness_ms / lane_ms * 100
        figures["lane_share_timing_pct"] = timing_ms / lane_ms * 100
        figures["lane_share_rest_pct"] = max(0.0, 100 - (own_ms + harness_ms + timing_ms) / lane_ms * 100)
        # Of the rest: the GPU steps' compiles on their lanes (a cache hit where the candidate was built ahead).
        figures["lane_share_compile_pct"] = compiles["ms"] / lane_ms * 100
        # ... and the other shapes' trials (their own GPU requests, after the verification passed).
        figures["lane_share_other_shapes_pct"] = sum(p["shapes_wall_ms"] for p in phases.values()) / lane_ms * 100
        # ... and the robustness conditioning, once per task in a worker before its first request (measured
        # where it runs since 2026-12-08; before, this read about 0).
        figures["lane_share_conditioning_pct"] = sum(p["robustness_conditioning_ms"] for p in phases.values()) / lane_ms * 100
        if compiles["count"]:
            figures["gpu_step_compile_ms_mean"] = compiles["ms"] / compiles["count"]
            figures["gpu_step_compile_cache_hit_pct"] = compiles["cache_hits"] / compiles["count"] * 100
        warm = ((h.get("compile") or {}).get("warm") or {})
        if isinstance(warm.get("done"), int):
            figures["warm_compiles_done_count"] = warm["done"]
        for tool, p in phases.items():
            n = len(lat[tool])
            if n:
                for k, v in p.items():
                    figures[f"{tool}_{k}_mean"] = v / n
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
        # The timed pairs each timing request needed, and the share stopped by each rule (timing.stop:
        # decided (the sequential rule), rse, budget, max_reps).
        for tool in ("profile", "submit"):
            got = [(n, why) for t, n, why in stops if t == tool]
            if got:
                pairs = [n for n, _ in got]
                figures[f"{tool}_timed_pairs_median"] = statistics.median(pairs)
                figures[f"{tool}_timed_pairs_p90"] = pct(pairs, 90)
                figures[f"{tool}_timed_pairs_max"] = max(pairs)
                for why in ("decided", "rse", "budget", "max_reps"):
                    figures[f"{tool}_stopped_{why}_pct"] = sum(w == why for _, w in got) / len(got) * 100
    for k, v in figures.items():
        print(f"{k:40s} {v:12.3f}")

    if args.json:
        result = {**results_doc.host(),
                  "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                  "commit": results_doc.commit(),
                  "command": " ".join(sys.argv), "host_cpus": os.cpu_count(), "figures": figures}
        label = f"_{args.label}" if args.label else ""
        name = f"serve_bench_{'gpu' if args.gpu else 'cpu'}_{datetime.date.today().isoformat()}{label}.json"
        results_doc.write(os.path.join(ROOT, "tools", "bench", "results", name), result, "serve_bench")


if __name__ == "__main__":
    main()
