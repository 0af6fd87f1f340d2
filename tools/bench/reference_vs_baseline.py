#!/usr/bin/env python3
"""Is kforge's eager reference as fast as the eager PyTorch the dataset's baselines measured?

The reward times a candidate against the task's C++ reference (libtorch running the op graph, in
the GPU worker) and rescales the stored torch.compile time by (that eager time now / the stored
eager time, measured by tools/synth_gpu.py from the Python program). Both are "eager PyTorch"; this
bench shows how closely they agree, task by task: for N kept tasks drawn with a seed, it runs
`kforge task run SPEC --device D --json` (the reference, timed with configs/eval.yaml's method)
and divides its median by the dataset's `eager_ms`.

    python3 tools/bench/reference_vs_baseline.py DATASET(.h5|.h5.xz) --kforge BIN [--n 40] [--seed 1]
        [--device cuda] [--check-dims] [--json OUT]

--check-dims with --device cpu tries the steps without a GPU (the rows measured in synth_gpu's CPU
mode are at the check dims too). Prints one row per task and the ratio's median, p10, p90 and
geometric mean, and the tasks more than 10 % apart.

--python-now also measures the same tasks' Python eager time again, now, with synth_gpu.py (into a
temporary folder, its method and flags), which splits the ratio into the drift since the baseline
was stored (Python now / stored) and the C++ reference against Python eager on the same machine
(reference / Python now).
"""
import argparse
import datetime
import json
import lzma
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile

import results_doc

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def percentile(xs, p):
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, int(round(p * (len(s) - 1)))))]


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dataset")
    ap.add_argument("--kforge", required=True)
    ap.add_argument("--n", type=int, default=40)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--check-dims", action="store_true")
    ap.add_argument("--config", default=os.path.join(ROOT, "configs", "eval.yaml"))
    ap.add_argument("--json", default=None)
    ap.add_argument("--commit", default=results_doc.commit())
    ap.add_argument("--python-now", action="store_true", help="also time the tasks' Python eager now (synth_gpu.py)")
    ap.add_argument("--synth-args", default="", help="more synth_gpu.py options for --python-now (tests)")
    a = ap.parse_args(argv)
    if not os.path.exists(a.dataset):
        print(f"reference_vs_baseline: {a.dataset}: no such file", file=sys.stderr)
        return 2
    tmp = tempfile.mkdtemp(prefix="kforge-refcmp-")
    try:
        ds = a.dataset
        if ds.endswith(".xz"):  # one decompressed copy, not one per `kforge tasks` call
            ds = os.path.join(tmp, "dataset.h5")
            with lzma.open(a.dataset) as src, open(ds, "wb") as dst:
                shutil.copyfileobj(src, dst)
        jl = os.path.join(tmp, "ok.jsonl")
        r = run([a.kforge, "tasks", "export", ds, "--status", "ok", "--format", "jsonl", "--out", jl])
        if r.returncode != 0:
            print(f"reference_vs_baseline: kforge tasks export failed: {r.stderr.strip()}", file=sys.stderr)
            return 2
        tasks = []
        with open(jl) as f:
            for line in f:
                t = json.loads(line)
                e = float(t.get("eager_ms") or "nan")
                if math.isfinite(e) and e > 0:
                    tasks.append((t["id"], e))
        if not tasks:
            print("reference_vs_baseline: no kept task with a stored eager time", file=sys.stderr)
            return 2
        pick = sorted(random.Random(a.seed).sample(tasks, min(a.n, len(tasks))))
        rows, failed = [], []
        device = None
        print(f"{len(pick)} of {len(tasks)} kept tasks (seed {a.seed}); reference on {a.device}"
              + (" at the check dims" if a.check_dims else ""), flush=True)
        print("| task | stored eager (ms) | reference now (ms) | ratio | reference n, rse |")
        print("| --- | --- | --- | --- | --- |")
        for tid, eager_ms in pick:
            spec = os.path.join(tmp, tid + ".yaml")
            r = run([a.kforge, "tasks", "show", ds, tid])
            if r.returncode != 0:
                failed.append((tid, r.stderr.strip()))
                continue
            with open(spec, "w") as f:
                f.write(r.stdout)
            cmd = [a.kforge, "task", "run", spec, "--device", a.device, "--json", "--config", a.config]
            if a.check_dims:
                cmd.append("--check-dims")
            r = run(cmd)
            if r.returncode != 0:
                failed.append((tid, (r.stderr.strip().splitlines() or ["?"])[-1]))
                print(f"| {tid} | {eager_ms:.3f} | failed: {failed[-1][1][:80]} | | |", flush=True)
                continue
            doc = json.loads(r.stdout)
            device = doc.get("device", device)
            t = doc["timing"]
            ratio = t["median_ms"] / eager_ms
            rows.append({"id": tid, "stored_eager_ms": eager_ms, "reference_ms": t["median_ms"], "ratio": ratio,
                         "n": t["n"], "rse": t["rse"]})
            print(f"| {tid} | {eager_ms:.3f} | {t['median_ms']:.3f} | {ratio:.3f} | {t['n']}, {100 * t['rse']:.2f} % |",
                  flush=True)
        if not rows:
            print("reference_vs_baseline: every reference run failed", file=sys.stderr)
            return 1
        py_now = {}
        if a.python_now:
            ids = os.path.join(tmp, "ids.txt")
            with open(ids, "w") as f:
                f.write("".join(x["id"] + "\n" for x in rows))
            cmd = [sys.executable, os.path.join(ROOT, "tools", "synth_gpu.py"), ds, "--ids", ids, "--shard", "0/1",
                   "--out", os.path.join(tmp, "now"), "--device", a.device] + a.synth_args.split()
            # The GPU stage reads the tasks through this same kforge.
            r = subprocess.run(cmd, capture_output=True, text=True,
                               env=dict(os.environ, KFORGE_BIN=os.path.abspath(a.kforge) if os.sep in a.kforge
                                        else (shutil.which(a.kforge) or a.kforge)))
            if r.returncode != 0:
                print(f"reference_vs_baseline: synth_gpu.py failed: {(r.stderr.strip().splitlines() or ['?'])[-1]}",
                      file=sys.stderr)
                return 1
            with open(os.path.join(tmp, "now", "part-0.jsonl")) as f:
                for line in f:
                    rec = json.loads(line)
                    if rec.get("eager_ms"):
                        py_now[rec["id"]] = rec["eager_ms"]
            for x in rows:
                if x["id"] in py_now:
                    x["python_now_ms"] = py_now[x["id"]]
                    x["drift"] = py_now[x["id"]] / x["stored_eager_ms"]
                    x["reference_over_python_now"] = x["reference_ms"] / py_now[x["id"]]
        ratios = [x["ratio"] for x in rows]
        gm = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        apart = [x for x in rows if abs(x["ratio"] - 1) > 0.10]
        print(f"\nreference now / stored eager over {len(rows)} task(s): median {statistics.median(ratios):.3f}, "
              f"p10 {percentile(ratios, 0.1):.3f}, p90 {percentile(ratios, 0.9):.3f}, geomean {gm:.3f}; "
              f"{len(apart)} more than 10 % apart" + (f"; {len(failed)} failed" if failed else ""))
        for x in sorted(apart, key=lambda x: -abs(math.log(x["ratio"])))[:10]:
            print(f"  {x['id']}: {x['ratio']:.3f} ({x['reference_ms']:.3f} against {x['stored_eager_ms']:.3f} ms)")
        split = {}
        for key, what in (("drift", "Python eager now / stored (the machine and day)"),
                          ("reference_over_python_now", "reference / Python eager now (C++ against Python, same machine)")):
            xs = [x[key] for x in rows if key in x]
            if xs:
                split[key] = xs
                print(f"{what} over {len(xs)} task(s): median {statistics.median(xs):.3f}, p10 {percentile(xs, 0.1):.3f}, "
                      f"p90 {percentile(xs, 0.9):.3f}")
        if a.json:
            figures = {"tasks_count": len(rows), "tasks_failed_count": len(failed),
                       "ratio_median_ratio": statistics.median(ratios), "ratio_p10_ratio": percentile(ratios, 0.1),
                       "ratio_p90_ratio": percentile(ratios, 0.9), "ratio_geomean_ratio": gm,
                       "tasks_over_10pct_apart_count": len(apart)}
            for key, xs in split.items():
                figures[f"{key}_median_ratio"] = statistics.median(xs)
                figures[f"{key}_p10_ratio"] = percentile(xs, 0.1)
                figures[f"{key}_p90_ratio"] = percentile(xs, 0.9)
            dev = device or {}
            doc = {"gpu": dev.get("name", a.device), "driver": dev.get("driver", ""), "cuda": dev.get("cuda", ""),
                   "torch": dev.get("torch", ""), "date": datetime.date.today().isoformat(), "commit": a.commit,
                   "command": "python3 tools/bench/reference_vs_baseline.py " + " ".join(sys.argv[1:] if argv is None else argv),
                   "figures": figures, "details": {"rows": rows, "failed": failed}}
            results_doc.write(a.json, doc, "reference_vs_baseline")
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
