#!/bin/bash
# Cold-start wall time of `kforge eval`, on a GPU host after `bash .gpu/run.sh configure`
# and a build of kforge (it builds kforge-full, kforge-worker and kforge-compile-worker with it):
#   bash tools/bench/cold_start.sh [BUILD_DIR] [OUTDIR]
# BUILD_DIR: $1, else $KFORGE_BUILD_DIR, else build-gpu. OUTDIR (default cold_start_out): the log of
# every run (runs/), and cold_start.json, the results record (tools/bench/results_doc.py).
# Each case runs as a fresh process N times (KFORGE_COLD_N, default 5) after one run not counted
# (the page cache and the driver warm, as they are for any later eval on the host):
#   eval  linear_relu/tiled, gelu_scale_residual/fused    kforge eval --json (compile, verify, time)
#   check linear_relu/tiled                                kforge eval --check --json (no GPU worker)
# It prints, per case, the median of the report's `cold_start` phases (env/evaluator/EVAL_REPORT.md) and
# the wall time measured around the process. About a minute on an H200; it stops starting runs
# after KFORGE_COLD_BUDGET_S (default 100) seconds. Its Python (tools/python_env.sh) needs only the
# standard library.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
b=${1:-${KFORGE_BUILD_DIR:-build-gpu}}
out=${2:-cold_start_out}
case $b in /*) ;; *) b=$PWD/$b ;; esac
mkdir -p "$out/runs"; out=$(cd "$out" && pwd)
cd "$root"
export LD_LIBRARY_PATH=/opt/project-deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
. "$root/tools/python_env.sh"
kforge_python "$root" || exit 2
py=$KFORGE_PYTHON_BIN
for x in tools/kforge tools/kforge-full env/kforge-worker env/kforge-compile-worker; do
  [ -x "$b/$x" ] || { echo "cold_start: $b/$x is missing: build the kforge target in $b" >&2; exit 2; }
done
exec "$py" - "$b" "$out" "$*" <<'EOF'
import datetime
import json
import os
import statistics
import subprocess
import sys
import time

build, out, argline = sys.argv[1], sys.argv[2], sys.argv[3]
sys.path.insert(0, os.path.join(os.getcwd(), "tools", "bench"))
import results_doc  # noqa: E402

kforge = os.path.join(build, "tools", "kforge")
n = int(os.environ.get("KFORGE_COLD_N", "5"))
budget_s = float(os.environ.get("KFORGE_COLD_BUDGET_S", "100"))
cand = "datasets/samples/candidates"
cases = [
    ("eval_linear_relu_tiled", ["eval", "--task", "linear_relu", "--candidate", f"{cand}/linear_relu/tiled", "--json"]),
    ("eval_gelu_scale_residual_fused",
     ["eval", "--task", "gelu_scale_residual", "--candidate", f"{cand}/gelu_scale_residual/fused", "--json"]),
    ("check_linear_relu_tiled", ["eval", "--check", "--task", "linear_relu", "--candidate", f"{cand}/linear_relu/tiled", "--json"]),
]
t_start = time.monotonic()


def run_once(name, args, i):
    t0 = time.monotonic()
    p = subprocess.run([kforge, *args], capture_output=True, text=True, timeout=120)
    wall_ms = (time.monotonic() - t0) * 1e3
    with open(os.path.join(out, "runs", f"{name}_{i}.json"), "w") as f:
        f.write(p.stdout)
    with open(os.path.join(out, "runs", f"{name}_{i}.stderr"), "w") as f:
        f.write(p.stderr)
    try:
        doc = json.loads(p.stdout)
    except ValueError:
        doc = {}
    return wall_ms, p.returncode, doc


def num(d, *path):
    for k in path:
        if not isinstance(d, dict) or d.get(k) is None:
            return None
        d = d[k]
    return float(d) if isinstance(d, (int, float)) and not isinstance(d, bool) else None


def phases(wall_ms, doc):
    """One run's figures (ms): outside wall, then the report's cold_start, flattened."""
    c = doc.get("cold_start") or {}
    row = {"wall_outside": wall_ms}
    for k in ("wall_ms", "process_to_main_ms", "static_init_ms", "setup_ms", "request_at_ms", "request_ms",
              "shutdown_ms", "worker_ms"):
        row[k[:-3]] = num(c, k)
    row["compile"] = num(doc, "compile", "compile_ms")
    row["gpu_worker_request"] = num(doc, "phases", "worker_ms")
    row["gpu_request_wall"] = num(doc, "gpu_request_wall_ms")
    for w in ("compile_worker", "gpu_worker"):
        s = c.get(w) or {}
        for k in ("spawn_at_ms", "spawn_to_preinit_ms", "static_init_ms", "spawn_to_main_ms", "init_ms",
                  "spawn_to_ready_ms", "ready_at_ms", "hello_at_ms", "hello_wait_ms"):
            row[f"{w}.{k[:-3]}"] = num(s, k)
        for k, v in (s.get("phases_ms") or {}).items():
            row[f"{w}.{k}"] = float(v)
    if row["worker"] is not None:
        row["overhead_outside"] = wall_ms - row["worker"]
    return row


results, details = {}, {}
for name, args in cases:
    rows, rcs, verdicts = [], [], []
    first = None
    for i in range(n + 1):
        if i > 1 and time.monotonic() - t_start > budget_s:
            print(f"cold_start: budget of {budget_s:.0f} s spent; {name} has {len(rows)} run(s)", file=sys.stderr)
            break
        wall_ms, rc, doc = run_once(name, args, i)
        if i == 0:
            first = wall_ms
            device = doc.get("device") if isinstance(doc.get("device"), dict) else None
            if device:
                details["device"] = device
            continue
        rows.append(phases(wall_ms, doc))
        rcs.append(rc)
        verdicts.append(doc.get("verdict"))
    keys = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    med = {}
    for k in keys:
        vals = [r[k] for r in rows if r.get(k) is not None]
        if vals:
            med[k] = statistics.median(vals)
    results[name] = med
    details[name] = {"command": " ".join(["kforge", *args]), "runs": len(rows), "exit_codes": rcs, "verdicts": verdicts,
                     "first_run_wall_ms": first, "median_ms": med,
                     "min_wall_outside_ms": min((r["wall_outside"] for r in rows), default=None),
                     "max_wall_outside_ms": max((r["wall_outside"] for r in rows), default=None)}

# The table: one row per phase, one column per case (median of the runs, ms).
names = [c[0] for c in cases]
order = ["wall_outside", "wall", "worker", "overhead_outside", "process_to_main", "static_init", "setup",
         "compile_worker.spawn_at", "compile_worker.spawn_to_preinit", "compile_worker.static_init",
         "compile_worker.spawn_to_main", "compile_worker.nvrtc_init", "compile_worker.warm_up", "compile_worker.seccomp",
         "compile_worker.ready_at", "gpu_worker.spawn_at", "gpu_worker.spawn_to_preinit", "gpu_worker.static_init",
         "gpu_worker.spawn_to_main", "gpu_worker.cuda_context", "gpu_worker.gpu_worker_init", "gpu_worker.seccomp",
         "gpu_worker.ready_at", "request_at", "compile", "gpu_request_wall", "gpu_worker_request", "request", "shutdown"]
order += sorted({k for m in results.values() for k in m} - set(order))
label = {"wall_outside": "wall (around the process)", "wall": "wall (the report's)", "worker": "workers' own time",
         "overhead_outside": "wall - workers' own"}
w0 = max(len(label.get(k, k)) for k in order) + 2
print(f"kforge eval cold start, median of {n} fresh runs (ms); {build}")
print("".ljust(w0) + "".join(x.rjust(32) for x in names))
for k in order:
    if not any(k in results[x] for x in names):
        continue
    cells = "".join((f"{results[x][k]:.1f}" if k in results[x] else "-").rjust(32) for x in names)
    print(label.get(k, k).ljust(w0) + cells)
for x in names:
    d = details[x]
    print(f"{x}: verdicts {d['verdicts']}, exit codes {d['exit_codes']}, first (uncounted) run {d['first_run_wall_ms']:.0f} ms")

# The record: figures named <case>_<phase>_ms_p50, and the headline ones of the issue.
figures = {}
for x in names:
    for k, v in results[x].items():
        figures[f"{x}_{k.replace('.', '_')}_ms_p50"] = round(v, 3)
head = results.get("eval_linear_relu_tiled", {})
for fig, key in (("eval_cold_wall_ms_p50", "wall_outside"), ("eval_worker_ms_p50", "worker"),
                 ("eval_overhead_ms_p50", "overhead_outside")):
    if key in head:
        figures[fig] = round(head[key], 3)
chk = results.get("check_linear_relu_tiled", {})
for fig, key in (("check_cold_wall_ms_p50", "wall_outside"), ("check_worker_ms_p50", "worker")):
    if key in chk:
        figures[fig] = round(chk[key], 3)
figures["runs_per_case_count"] = n
dev = details.get("device") or {}
driver = ""
try:  # persistence mode off makes every process's first CUDA call initialise the driver
    smi = subprocess.run(["nvidia-smi", "--query-gpu=driver_version,persistence_mode", "--format=csv,noheader"],
                         capture_output=True, text=True, timeout=30).stdout.strip().splitlines()[0]
    driver, details["persistence_mode"] = [x.strip() for x in smi.split(",")][:2]
    print(f"driver {driver}, persistence mode {details['persistence_mode']}")
except (OSError, subprocess.SubprocessError, IndexError, ValueError):
    pass
doc = {"gpu": dev.get("name", ""), "driver": driver, "cuda": dev.get("cuda", ""), "torch": dev.get("torch", ""),
       "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), "commit": results_doc.commit(),
       "command": "bash tools/bench/cold_start.sh " + argline, "figures": figures, "details": details}
results_doc.write(os.path.join(out, "cold_start.json"), doc, "cold_start")
print(f"cold_start: {time.monotonic() - t_start:.0f} s in all")
EOF
