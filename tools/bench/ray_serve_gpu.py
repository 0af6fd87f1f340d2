#!/usr/bin/env python3
"""A Ray-started `kforge serve` on a GPU host, behind kforge_client.ray's router, played by a
trainer-side asyncio client (issue 32): a local Ray cluster over this host's GPUs, one server per
GPU node in a placement group (ServerFleet), the Router, and one episode per stored sample
candidate expected to pass (serve_bench's `--pairs samples`, 31 over 13 tasks): write the
candidate, verify, submit. The streams merge into one recording (MergedRecording).

Prints and, with --json, writes tools/bench/results/ray_serve_gpu_DATE.json: the fleet's bundles,
each episode's server, verify verdict and submit reward, the latencies, judged candidates per
GPU-hour, health's baselines, and whether the merged recording holds every episode. Exits 1 if any
episode did not end in a submit with a reward, or the recording misses one.

    tools/bench/ray_serve_gpu.py --kforge build/tools/kforge --json   # on a GPU host with ray
"""
import argparse
import asyncio
import datetime
import os
import statistics
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools", "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ray  # noqa: E402

import results_doc  # noqa: E402
from kforge_client import read_trajectories  # noqa: E402
from kforge_client.ray import MergedRecording, Router, ServerFleet, ServerShape  # noqa: E402
from serve_bench import load_pairs, read  # noqa: E402


def call(name, **arguments):
    return {"name": name, "arguments": arguments}


async def play(router, pairs, episodes):
    rows = []

    async def one(i):
        task, folder = pairs[i % len(pairs)]
        t0 = time.perf_counter()
        ep = await router.reset(task, seed=i, options={"max_turns": 100})
        await ep.step(call("write_file", path="kernel.cu", content=read(folder, "kernel.cu")))
        await ep.step(call("write_file", path="launch.yaml", content=read(folder, "launch.yaml")))
        t1 = time.perf_counter()
        _, _, _, _, vinfo = await ep.step(call("verify"))
        t2 = time.perf_counter()
        _, reward, term, _, sinfo = await ep.step(call("submit"))
        t3 = time.perf_counter()
        report = vinfo.get("report") or {}
        rows.append({"episode": ep.id, "task": task, "candidate": os.path.basename(folder), "server": ep.server.name,
                     "verify_verdict": report.get("verdict"), "submit_reward": reward, "terminated": term,
                     "verify_ms": (t2 - t1) * 1000, "submit_ms": (t3 - t2) * 1000, "episode_ms": (t3 - t0) * 1000})

    await asyncio.gather(*[one(i) for i in range(episodes)])
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kforge", default=os.path.join(ROOT, "build", "tools", "kforge"))
    ap.add_argument("--episodes", type=int, default=0, help="episodes (default: one per pair)")
    ap.add_argument("--cpus", type=int, default=8, help="CPUs each server reserves")
    ap.add_argument("--gpus", default="all", help="GPUs each server reserves: all (one server per GPU node) or a count; "
                                                  "0 runs the same play on CPU (verify and submit then answer no_gpu)")
    ap.add_argument("--json", action="store_true", help="write tools/bench/results/ray_serve_gpu_DATE.json")
    args = ap.parse_args()
    pairs = load_pairs("samples", None)
    episodes = args.episodes or len(pairs)
    work = tempfile.mkdtemp(prefix="kforge_ray_serve_")
    os.environ["PYTHONPATH"] = os.path.join(ROOT, "tools", "python") + os.pathsep + os.environ.get("PYTHONPATH", "")
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    ray.init(address="local", include_dashboard=False, log_to_driver=False)  # its own cluster, never one running here
    fleet = None
    try:
        t0 = time.perf_counter()
        fleet = ServerFleet.start(args.kforge, overrides={"scheduler": {"gpus": -1 if args.gpus != "0" else 0}, "record": {"fsync": False}},
                                  shape=ServerShape(gpus=args.gpus if args.gpus == "all" else int(args.gpus), cpus=args.cpus), workdir=work)
        started_s = time.perf_counter() - t0
        recording = MergedRecording(os.path.join(work, "merged.h5"), {s.name: s.stream for s in fleet.servers})
        bundles = {s.name: s.bundle for s in fleet.servers}
        print(f"ray_serve_gpu: {len(fleet.servers)} server(s) in {started_s:.1f} s: {bundles}")

        async def run():
            async with Router(fleet.servers, recording=recording) as r:
                t = time.perf_counter()
                rows = await play(r, pairs, episodes)
                return rows, time.perf_counter() - t, r.status()

        rows, wall, status = asyncio.run(run())
        recording.close(wait_s=10)
        recorded = {t["episode"] for t in read_trajectories(recording.path)}
    finally:
        if fleet is not None:
            fleet.shutdown(timeout=60)
        ray.shutdown()
    gpus = sum(int(b.get("GPU", 0)) for b in bundles.values())
    rewards = [r["submit_reward"] for r in rows]
    missing = [r["episode"] for r in rows if r["episode"] not in recorded]
    figures = {"servers_count": len(bundles), "gpus_count": gpus, "episodes_count": len(rows), "fleet_start_s": started_s,
               "wall_s": wall, "judged_candidates_per_gpu_hour": len(rows) / (wall / 3600 * max(1, gpus)),
               "verify_ms_p50": statistics.median(r["verify_ms"] for r in rows),
               "submit_ms_p50": statistics.median(r["submit_ms"] for r in rows),
               "verify_pass_count": sum(r["verify_verdict"] == "pass" for r in rows),
               "submit_terminated_count": sum(bool(r["terminated"]) for r in rows),
               "reward_mean": statistics.mean(rewards), "recorded_count": len(recorded),
               "missing_from_recording_count": len(missing)}
    details = {"rewards_by_value": {str(v): rewards.count(v) for v in sorted(set(rewards))}, "bundles": bundles,
               "router_status": status, "missing_from_recording": missing, "episodes": rows}
    for k, v in figures.items():
        print(f"{k:34s} {v:12.3f}")
    print(f"{'rewards_by_value':34s} {details['rewards_by_value']}")
    if args.json:
        result = {**results_doc.host(),
                  "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                  "commit": results_doc.commit(), "command": " ".join(sys.argv), "figures": figures, "details": details}
        name = f"ray_serve_gpu_{datetime.date.today().isoformat()}.json"
        results_doc.write(os.path.join(ROOT, "tools", "bench", "results", name), result, "ray_serve_gpu")
    ok = not missing and figures["submit_terminated_count"] == len(rows)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
