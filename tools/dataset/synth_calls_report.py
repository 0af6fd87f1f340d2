#!/usr/bin/env python3
"""What the GPU stage's device calls did, from the logs `tools/dataset/synth_dataset.sh collect` keeps
(WORK/logs/call-NNN/log-K.txt, one per process): per call and process the rows written, ok and
rejected, the elapsed time and rows per minute; in all, the rows per minute of the host (a call
lasts as long as its slowest process) and where the timing processes' time went, by phase.

    tools/dataset/synth_calls_report.py WORK [--calls FIRST-LAST] [--json OUT] [--commit SHA] [--command TEXT]

--json writes the figures in the format of tools/bench/results/ (the per-call table under
`details`). A process whose log has no final lines (killed before it wrote them) is reported as
such and left out of the figures.
"""
import argparse
import datetime
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
import results_doc  # noqa: E402

TIME = re.compile(r"synth_gpu: time \(s\): elapsed ([\d.]+) = start-up ([\d.]+) \+ tasks ([\d.]+) \(([^)]*)\)")
BUSY = re.compile(r"compile workers: (\d+) x [\d.]+ s, (\d+) jobs, busy [\d.]+ \((\d+) %")
WROTE = re.compile(r"synth_gpu: shard (\S+): wrote (\d+) row\(s\) .*\(ok (\d+), rejected (\d+)\)")
ENV = re.compile(r'"gpu": "([^"]*)".*?"driver": "([^"]*)"')


def parse_log(path):
    text = open(path, errors="replace").read()
    t, w = TIME.search(text), WROTE.search(text)
    if not t or not w:
        return None
    phases = {}
    for part in t.group(4).split(", "):
        name, _, v = part.rpartition(" ")
        if name:
            phases[name] = float(v)
    b = BUSY.search(text)
    return {"shard": w.group(1), "rows": int(w.group(2)), "ok": int(w.group(3)), "rejected": int(w.group(4)),
            "elapsed_s": float(t.group(1)), "startup_s": float(t.group(2)), "tasks_s": float(t.group(3)),
            "phases_s": phases, "workers": int(b.group(1)) if b else 0,
            "workers_busy_pct": int(b.group(3)) if b else None}


def call_number(name):
    m = re.fullmatch(r"call-(\d+)", name)
    return int(m.group(1)) if m else None


def report(work, first=None, last=None):
    logs = os.path.join(work, "logs")
    if not os.path.isdir(logs):
        raise SystemExit(f"synth_calls_report: {logs}: no logs (collect a call first)")
    calls = []
    for name in sorted(os.listdir(logs)):
        n = call_number(name)
        if n is None or (first is not None and n < first) or (last is not None and n > last):
            continue
        procs, missing = [], []
        for f in sorted(os.listdir(os.path.join(logs, name))):
            if not re.fullmatch(r"log-\d+\.txt", f):
                continue
            p = parse_log(os.path.join(logs, name, f))
            (procs.append(dict(p, log=f)) if p else missing.append(f))
        calls.append({"call": name, "processes": procs, "incomplete_logs": missing,
                      "rows": sum(p["rows"] for p in procs),
                      "wall_s": max((p["elapsed_s"] for p in procs), default=0.0)})
    if not calls:
        raise SystemExit(f"synth_calls_report: no call-NNN folders under {logs}"
                         + (f" in {first}-{last}" if first is not None else ""))
    return calls


def figures(calls):
    procs = [p for c in calls for p in c["processes"]]
    rows = sum(c["rows"] for c in calls)
    wall = sum(c["wall_s"] for c in calls)
    tasks = sum(p["tasks_s"] for p in procs)
    phases = {}
    for p in procs:
        for k, v in p["phases_s"].items():
            phases[k] = phases.get(k, 0.0) + v
    gpu_s = sum(c["wall_s"] * len(c["processes"]) for c in calls)  # one process per GPU
    f = {"calls_count": len(calls), "rows_count": rows, "rows_ok_count": sum(p["ok"] for p in procs),
         "rows_rejected_count": sum(p["rejected"] for p in procs), "calls_wall_s": round(wall, 1),
         "rows_per_min_host": round(60.0 * rows / wall, 1) if wall else 0.0,
         "gpu_held_s": round(gpu_s, 1), "rows_per_gpu_hour": round(3600.0 * rows / gpu_s, 1) if gpu_s else 0.0,
         "gpus_per_call_max_count": max((len(c["processes"]) for c in calls), default=0),
         "processes_tasks_s": round(tasks, 1)}
    for k, v in sorted(phases.items(), key=lambda kv: -kv[1]):
        f[f"phase_{k}_s"] = round(v, 1)
        f[f"phase_{k}_pct"] = round(100.0 * v / tasks, 1) if tasks else 0.0
    return f, phases, tasks


def print_report(calls):
    print("| call | process | rows | ok | rejected | elapsed (s) | rows/min | workers busy |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for c in calls:
        for p in c["processes"]:
            rate = 60.0 * p["rows"] / p["elapsed_s"] if p["elapsed_s"] else 0.0
            busy = f"{p['workers_busy_pct']} %" if p["workers_busy_pct"] is not None else "-"
            print(f"| {c['call']} | {p['shard']} | {p['rows']} | {p['ok']} | {p['rejected']} | {p['elapsed_s']:.1f} | "
                  f"{rate:.1f} | {busy} |")
        for m in c["incomplete_logs"]:
            print(f"| {c['call']} | {m}: no final lines (killed?) | | | | | | |")
    f, phases, tasks = figures(calls)
    print(f"\n{f['rows_count']} rows ({f['rows_ok_count']} ok, {f['rows_rejected_count']} rejected) in "
          f"{f['calls_count']} call(s), {f['calls_wall_s']:.1f} s (each call as long as its slowest process): "
          f"{f['rows_per_min_host']:.1f} rows/min for the host; {f['gpu_held_s'] / 3600:.2f} GPU-hours "
          f"(each call's time x its processes, one per GPU), {f['rows_per_gpu_hour']:.0f} rows per GPU-hour")
    if tasks:
        print(f"\nwhere the timing processes' {tasks:.1f} s of tasks went:")
        for k, v in sorted(phases.items(), key=lambda kv: -kv[1]):
            print(f"  {k:<14s}{v:9.1f} s  {100.0 * v / tasks:5.1f} %")
    return f


def env_of(work):
    """gpu, driver, torch and cuda of the last record in the part files (the machine that measured)."""
    gdir = os.path.join(work, "gpu")
    last = None
    for name in sorted(os.listdir(gdir)) if os.path.isdir(gdir) else []:
        with open(os.path.join(gdir, name)) as fh:
            for line in fh:
                if line.strip().startswith("{"):
                    last = line
    try:
        e = json.loads(last).get("env", {}) if last else {}
    except ValueError:
        e = {}
    return {k: e.get(k, "") for k in ("gpu", "driver", "cuda", "torch")}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("work")
    ap.add_argument("--calls", default=None, help="FIRST-LAST (call numbers, inclusive) or N")
    ap.add_argument("--json", default=None)
    ap.add_argument("--commit", default=results_doc.commit())
    ap.add_argument("--command", default="tools/dataset/synth_dataset.sh gpu BUDGET_S calls, then collect")
    a = ap.parse_args(argv)
    first = last = None
    if a.calls:
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", a.calls)
        if not m:
            print(f"synth_calls_report: --calls '{a.calls}': give FIRST-LAST or N", file=sys.stderr)
            return 2
        first, last = int(m.group(1)), int(m.group(2) or m.group(1))
    try:
        calls = report(a.work, first, last)
    except SystemExit as e:
        print(e, file=sys.stderr)
        return 2
    f = print_report(calls)
    if a.json:
        doc = dict(env_of(a.work), date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
                   commit=a.commit, command=a.command, figures=f, details={"calls": calls})
        print()
        results_doc.write(a.json, doc, "synth_calls_report")
    return 0


if __name__ == "__main__":
    sys.exit(main())
