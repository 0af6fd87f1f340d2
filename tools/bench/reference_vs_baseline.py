#!/usr/bin/env python3
"""Is kforge's eager reference as fast as the eager PyTorch the dataset's baselines measured?

The reward times a candidate against the task's C++ reference (libtorch running the op graph, in
the GPU worker) and rescales the stored torch.compile time by (that eager time now / the stored
eager time, measured by tools/dataset/synth_gpu.py from the Python program). Both are "eager PyTorch"; this
bench shows how closely they agree, task by task: for N kept tasks drawn with a seed, it runs
`kforge task run SPEC --device D --json` (the reference, timed by env/judge/timing.cpp with the
baselines' settings) and divides its median by the dataset's `eager_ms`.

    python3 tools/bench/reference_vs_baseline.py DATASET(.h5|.h5.xz) --kforge BIN [--n 40] [--seed 1]
        [--device cuda] [--check-dims] [--json OUT] [--synth-config configs/synth.yaml]
        [--timing baseline|eval]

--check-dims with --device cpu tries the steps without a GPU (the rows measured in synth_gpu's CPU
mode are at the check dims too). Prints one row per task and the ratio's median, p10, p90 and
geometric mean, and the tasks more than 10 % apart.

--python-now also measures the same tasks' Python eager time again, now, with synth_gpu.py (into a
temporary folder, its method and flags), which splits the ratio into the drift since the baseline
was stored (Python now / stored) and the C++ reference against Python eager on the same machine
(reference / Python now).

The timing method is checked too (tools/bench/timing_method.py): each task's stored baseline must
have been measured as configs/synth.yaml's `baseline_timing` says (read through `kforge tasks
export-gpu`, as the GPU stage reads it; --synth-config picks another), and the reference is timed
with those same settings (--timing baseline, the default; --timing eval: with configs/eval.yaml's,
the evaluator's, and then only the flush and the clock are compared). The two method lines must
agree on the flush (kind, size on the same GPU, persisting L2 reset), the clock per call, the
warm-up and the stopping rule, and the precision flags both records carry must be equal. Any
difference is listed and makes the exit status 1, after the table and the JSON.
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
import timing_method

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def percentile(xs, p):
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, int(round(p * (len(s) - 1)))))]


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True)


class Failed(Exception):
    """A message for stderr and the exit status."""

    def __init__(self, msg, status):
        super().__init__(msg)
        self.status = status


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dataset")
    ap.add_argument("--kforge", required=True)
    ap.add_argument("--n", type=int, default=40)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--check-dims", action="store_true")
    ap.add_argument("--config", default=os.path.join(ROOT, "configs", "eval.yaml"))
    ap.add_argument("--synth-config", default=os.path.join(ROOT, "configs", "synth.yaml"),
                    help="whose baseline_timing the baselines were measured with (kforge reads it)")
    ap.add_argument("--timing", choices=["baseline", "eval"], default="baseline",
                    help="time the reference with the baselines' settings (default) or with --config's")
    ap.add_argument("--json", default=None)
    ap.add_argument("--commit", default=results_doc.commit())
    ap.add_argument("--python-now", action="store_true", help="also time the tasks' Python eager now (synth_gpu.py)")
    ap.add_argument("--synth-args", default="", help="more synth_gpu.py options for --python-now (tests)")
    return ap.parse_args(argv)


def kept_tasks(a, ds, tmp):
    """(id, stored eager ms, stored baseline object) of every kept task with an eager time."""
    jl = os.path.join(tmp, "ok.jsonl")
    r = run([a.kforge, "tasks", "export", ds, "--status", "ok", "--format", "jsonl", "--out", jl])
    if r.returncode != 0:
        raise Failed(f"kforge tasks export failed: {r.stderr.strip()}", 2)
    tasks = []
    with open(jl) as f:
        for line in f:
            t = json.loads(line)
            e = float(t.get("eager_ms") or "nan")
            if math.isfinite(e) and e > 0:
                tasks.append((t["id"], e, t.get("baseline") or {}))
    if not tasks:
        raise Failed("no kept task with a stored eager time", 2)
    return tasks


def baseline_timing(a, ds, tmp, task_id):
    """The synthesis config's baseline_timing as kforge resolves it (the settings line of export-gpu)."""
    ids = os.path.join(tmp, "one_id.txt")
    with open(ids, "w") as f:
        f.write(task_id + "\n")
    r = run([a.kforge, "tasks", "export-gpu", ds, "--ids", ids, "--shard", "0/1", "--config", a.synth_config, "--out", "-"])
    if r.returncode != 0:
        raise Failed(f"kforge tasks export-gpu failed: {(r.stderr.strip().splitlines() or ['?'])[-1]}", 2)
    return json.loads(r.stdout.splitlines()[0])["timing"]


def reference_config(a, tmp, timing):
    """--config, with its timing replaced by the baselines' settings under --timing baseline."""
    if a.timing == "eval":
        return a.config
    import yaml
    with open(a.config) as f:
        cfg = yaml.safe_load(f)
    cfg["timing"] = dict(timing)
    path = os.path.join(tmp, "eval_with_baseline_timing.yaml")
    with open(path, "w") as f:
        json.dump(cfg, f)  # JSON is YAML
    return path


def method_check(a, stored, reference, precision_flags, same_gpu, timing):
    """Every way this task's stored baseline and its reference run were measured differently, or
    differently from the config's baseline_timing."""
    try:
        b, r = timing_method.parse(stored.get("method", "")), timing_method.parse(reference)
    except timing_method.MethodError as e:
        return [str(e)]
    want = timing_method.settings_fields(timing)
    fields = timing_method.METHOD_FIELDS if a.timing == "baseline" else timing_method.FLUSH + timing_method.ORDER
    if not same_gpu:  # the flush size is factor x this GPU's L2
        fields = tuple(k for k in fields if k != "flush_mib")
    out = timing_method.differences(b, r, fields, ("baseline", "reference"))
    out += timing_method.differences(b, want, timing_method.SETTINGS_FIELDS, ("baseline", "config"))
    if a.timing == "baseline":
        out += timing_method.differences(r, want, timing_method.SETTINGS_FIELDS, ("reference", "config"))
    out += timing_method.flag_differences(stored.get("flags") or {}, precision_flags, ("baseline", "reference"))
    return out


def time_references(a, ds, tmp, pick, config, timing):
    """One `kforge task run` per task: the rows, the failures, the device, the method differences."""
    rows, failed, mismatched = [], [], {}
    device = None
    for tid, eager_ms, stored in pick:
        spec = os.path.join(tmp, tid + ".yaml")
        r = run([a.kforge, "tasks", "show", ds, tid])
        if r.returncode != 0:
            failed.append((tid, r.stderr.strip()))
            continue
        with open(spec, "w") as f:
            f.write(r.stdout)
        cmd = [a.kforge, "task", "run", spec, "--device", a.device, "--json", "--config", config]
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
        same_gpu = stored.get("gpu") == (device or {}).get("name")
        diffs = method_check(a, stored, t["method"], doc.get("precision_flags") or {}, same_gpu, timing)
        if diffs:
            mismatched[tid] = diffs
        rows.append({"id": tid, "stored_eager_ms": eager_ms, "reference_ms": t["median_ms"], "ratio": ratio,
                     "n": t["n"], "rse": t["rse"], "method_differences": diffs})
        print(f"| {tid} | {eager_ms:.3f} | {t['median_ms']:.3f} | {ratio:.3f} | {t['n']}, {100 * t['rse']:.2f} % |",
              flush=True)
    return rows, failed, mismatched, device


def python_now(a, ds, tmp, rows):
    """The same tasks' Python eager time now (synth_gpu.py), into the rows."""
    ids = os.path.join(tmp, "ids.txt")
    with open(ids, "w") as f:
        f.write("".join(x["id"] + "\n" for x in rows))
    cmd = [sys.executable, os.path.join(ROOT, "tools", "dataset", "synth_gpu.py"), ds, "--ids", ids, "--shard", "0/1",
           "--out", os.path.join(tmp, "now"), "--device", a.device, "--config", a.synth_config] + a.synth_args.split()
    # The GPU stage reads the tasks through this same kforge.
    r = subprocess.run(cmd, capture_output=True, text=True,
                       env=dict(os.environ, KFORGE_BIN=os.path.abspath(a.kforge) if os.sep in a.kforge
                                else (shutil.which(a.kforge) or a.kforge)))
    if r.returncode != 0:
        raise Failed(f"synth_gpu.py failed: {(r.stderr.strip().splitlines() or ['?'])[-1]}", 1)
    py_now = {}
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


def summarize(rows, failed, mismatched):
    """Prints the ratios (and their split, and the method check); returns the record's figures."""
    ratios = [x["ratio"] for x in rows]
    gm = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
    apart = [x for x in rows if abs(x["ratio"] - 1) > 0.10]
    print(f"\nreference now / stored eager over {len(rows)} task(s): median {statistics.median(ratios):.3f}, "
          f"p10 {percentile(ratios, 0.1):.3f}, p90 {percentile(ratios, 0.9):.3f}, geomean {gm:.3f}; "
          f"{len(apart)} more than 10 % apart" + (f"; {len(failed)} failed" if failed else ""))
    for x in sorted(apart, key=lambda x: -abs(math.log(x["ratio"])))[:10]:
        print(f"  {x['id']}: {x['ratio']:.3f} ({x['reference_ms']:.3f} against {x['stored_eager_ms']:.3f} ms)")
    figures = {"tasks_count": len(rows), "tasks_failed_count": len(failed),
               "ratio_median_ratio": statistics.median(ratios), "ratio_p10_ratio": percentile(ratios, 0.1),
               "ratio_p90_ratio": percentile(ratios, 0.9), "ratio_geomean_ratio": gm,
               "tasks_over_10pct_apart_count": len(apart), "method_mismatch_tasks_count": len(mismatched)}
    for key, what in (("drift", "Python eager now / stored (the machine and day)"),
                      ("reference_over_python_now", "reference / Python eager now (C++ against Python, same machine)")):
        xs = [x[key] for x in rows if key in x]
        if xs:
            print(f"{what} over {len(xs)} task(s): median {statistics.median(xs):.3f}, p10 {percentile(xs, 0.1):.3f}, "
                  f"p90 {percentile(xs, 0.9):.3f}")
            figures[f"{key}_median_ratio"] = statistics.median(xs)
            figures[f"{key}_p10_ratio"] = percentile(xs, 0.1)
            figures[f"{key}_p90_ratio"] = percentile(xs, 0.9)
    if mismatched:
        counts = {}
        for diffs in mismatched.values():
            for d in diffs:
                counts[d] = counts.get(d, 0) + 1
        print(f"timing method: {len(mismatched)} of {len(rows)} task(s) measured differently:")
        for d, n in sorted(counts.items(), key=lambda x: -x[1]):
            print(f"  {n} x {d}")
    else:
        print(f"timing method: the same for the baseline and the reference on all {len(rows)} task(s) "
              "(flush, clock, warm-up, stopping rule, precision flags)")
    return figures


def main(argv=None):
    a = parse_args(argv)
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
        tasks = kept_tasks(a, ds, tmp)
        pick = sorted(random.Random(a.seed).sample(tasks, min(a.n, len(tasks))), key=lambda t: t[:2])
        timing = baseline_timing(a, ds, tmp, pick[0][0])
        config = reference_config(a, tmp, timing)
        print(f"{len(pick)} of {len(tasks)} kept tasks (seed {a.seed}); reference on {a.device}"
              + (" at the check dims" if a.check_dims else "")
              + (" with the baselines' timing settings" if a.timing == "baseline" else f" with {a.config}'s timing"),
              flush=True)
        print("| task | stored eager (ms) | reference now (ms) | ratio | reference n, rse |")
        print("| --- | --- | --- | --- | --- |")
        rows, failed, mismatched, device = time_references(a, ds, tmp, pick, config, timing)
        if not rows:
            raise Failed("every reference run failed", 1)
        if a.python_now:
            python_now(a, ds, tmp, rows)
        figures = summarize(rows, failed, mismatched)
        if a.json:
            dev = device or {}
            doc = {"gpu": dev.get("name", a.device), "driver": dev.get("driver", ""), "cuda": dev.get("cuda", ""),
                   "torch": dev.get("torch", ""), "date": datetime.date.today().isoformat(), "commit": a.commit,
                   "command": "python3 tools/bench/reference_vs_baseline.py " + " ".join(sys.argv[1:] if argv is None else argv),
                   "figures": figures, "details": {"rows": rows, "failed": failed, "timing": timing}}
            results_doc.write(a.json, doc, "reference_vs_baseline")
        return 1 if mismatched else 0
    except Failed as e:
        print(f"reference_vs_baseline: {e}", file=sys.stderr)
        return e.status
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
