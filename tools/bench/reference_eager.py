#!/usr/bin/env python3
"""Runs `kforge task run --device cuda --json` on every sample task and records the eager
(C++ libtorch reference) times, plus a noise check: one task timed twice in separate processes.

    python3 tools/bench/reference_eager.py --kforge build-gpu/tools/kforge --out DIR [--commit SHA]

Writes DIR/reference_eager.json in the results format of tools/bench/results/ and prints a table.
"""
import argparse
import datetime
import glob
import json
import os
import subprocess
import sys

import results_doc

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_task(kforge, path, device):
    r = subprocess.run([kforge, "task", "run", path, "--device", device, "--json",
                        "--config", os.path.join(ROOT, "configs", "eval.yaml")], capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr.strip()
    return json.loads(r.stdout), ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kforge", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--commit", default=results_doc.commit())
    ap.add_argument("--noise-task", default="gelu_scale_residual")
    args = ap.parse_args()

    samples = sorted(glob.glob(os.path.join(ROOT, "datasets", "samples", "*.yaml")))
    figures, rows, failures, device = {}, [], [], None
    for path in samples:
        name = os.path.splitext(os.path.basename(path))[0]
        doc, err = run_task(args.kforge, path, args.device)
        if doc is None:
            failures.append((name, err))
            print(f"{name:24s} FAILED: {err}", flush=True)
            continue
        device = doc["device"]
        t = doc["timing"]
        figures[f"eager_ms_p50_{name}"] = t["median_ms"]
        rows.append((name, t["median_ms"], t["p10_ms"], t["p90_ms"], t["n"], t["rse"] * 100,
                     doc["achieved"]["tflop_per_s"], doc["achieved"]["gb_per_s"]))
        print(f"{name:24s} median {t['median_ms']:9.3f} ms  n {t['n']:4d}  rse {t['rse'] * 100:.2f}%", flush=True)

    # Noise: the same task timed again in a fresh process.
    again, _ = run_task(args.kforge, os.path.join(ROOT, "datasets", "samples", args.noise_task + ".yaml"), args.device)
    first = figures.get(f"eager_ms_p50_{args.noise_task}")
    if again and first:
        spread = abs(again["timing"]["median_ms"] - first) / first * 100
        figures["aa_median_spread_pct"] = spread

    try:  # the NVIDIA driver's version (the CUDA runtime reports only its driver API level)
        driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                capture_output=True, text=True).stdout.strip().splitlines()[0]
    except (OSError, IndexError):
        driver = device["driver"] if device else ""
    in_window = sum(1 for r in rows if 1.0 <= r[1] <= 100.0)
    figures["samples_in_1_100ms_window_count"] = in_window
    figures["samples_failed_count"] = len(failures)
    result = {
        "gpu": device["name"] if device else "unknown",
        "driver": driver,
        "cuda": device["cuda"] if device else "",
        "torch": device["torch"] if device else "",
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "commit": args.commit,
        "command": "python3 tools/bench/reference_eager.py --kforge build-gpu/tools/kforge --out $OUT",
        "figures": figures,
    }
    results_doc.write(os.path.join(args.out, "reference_eager.json"), result, "reference_eager")
    print()
    print(f"{'task':24s} {'median ms':>10s} {'p10':>9s} {'p90':>9s} {'n':>5s} {'rse%':>6s} {'TFLOP/s':>8s} {'GB/s':>8s}")
    for r in rows:
        print(f"{r[0]:24s} {r[1]:10.3f} {r[2]:9.3f} {r[3]:9.3f} {r[4]:5d} {r[5]:6.2f} {r[6]:8.2f} {r[7]:8.1f}")
    print(f"{in_window}/{len(rows)} samples in the 1-100 ms window; {len(failures)} failed; "
          f"A/A spread of {args.noise_task}: {figures.get('aa_median_spread_pct', float('nan')):.2f}%")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
