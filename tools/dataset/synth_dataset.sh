#!/bin/bash
# Builds the shipped dataset over several device calls: the CPU stage here, the GPU stage
# on the GPU host in as many calls as it takes (each resumes), then the merge and the shipped files
# here. The work folder is .gpu/synth (git-ignored, carried to the GPU host with `carry: [".gpu"]`).
#
#   tools/dataset/synth_dataset.sh prepare                here: kforge synth (CPU stage) into .gpu/synth
#   bash tools/dataset/synth_dataset.sh gpu BUDGET_S      on the GPU host: the GPU stage for BUDGET_S seconds,
#                                                         the rows left split over every visible GPU (GPU k writes
#                                                         part-k.jsonl); archive in $OUT/synth.tgz
#   tools/dataset/synth_dataset.sh collect FILES_AT       here: unpack a call's archive into .gpu/synth (parts, logs)
#   tools/dataset/synth_dataset.sh status                 here: rows measured and left
#   tools/dataset/synth_dataset.sh report [A-B] [JSON]    here: per call (all collected, or calls A to B) rows,
#                                                         rows/min and where the time went (synth_calls_report.py)
#   tools/dataset/synth_dataset.sh finish                 here: merge, its checks (synth_check.py), summary and
#                                                         plots, JSONL export, and the shipped files under
#                                                         datasets/synth/ (dataset.h5.xz, and a README.md with
#                                                         the figures, tools/dataset/synth_readme.py)
#   tools/dataset/synth_dataset.sh refilter JSONL         here, after finish: the input checks (issue 25) of
#                                                         `kforge tasks sensitivity ... --out JSONL` applied to the
#                                                         shipped dataset (tools/dataset/synth_refilter.py: failing rows
#                                                         become rejected:input_matters or rejected:ablation), its
#                                                         checks, and the shipped files and README written again
#
# Environment: KFORGE (the kforge binary, default build/tools/kforge), SYNTH_WORK (default .gpu/synth),
# SYNTH_CONFIG (default configs/synth.yaml), SYNTH_TARGET (kforge synth --target, default the
# config's target_tasks), SYNTH_DEVICE (cuda; cpu only to try the steps without a GPU, at check
# dims), SYNTH_ARGS (more synth_gpu.py options), SYNTH_DEST (default datasets/synth),
# SYNTH_RESULTS (default tools/bench/results/DATE_synth_dataset_h200.json), SYNTH_CALLS_RESULTS (finish:
# the calls' report, default tools/bench/results/DATE_synth_dataset_calls_h200.json), SYNTH_KEEP (gpu step: a
# folder on the GPU host where the parts outlive the call, for a next call made before collecting),
# SYNTH_PROCS (gpu step: processes, default one per visible GPU; in the CPU mode, default 1),
# SYNTH_ARGS_k (gpu step: more options for process k only, e.g. an A/B of an option on one host),
# SYNTH_CHECK_ARGS (finish: more tools/dataset/synth_check.py options), KFORGE_PYTHON_BIN (the interpreter,
# default the project's venv; on the GPU host without one, its python3: tools/python_env.sh).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
work=${SYNTH_WORK:-.gpu/synth}
kforge=${KFORGE:-build/tools/kforge}
# The GPU stage (tools/dataset/synth_gpu/) asks this kforge for the tasks and writes the results through it.
case $kforge in /*) ;; */*) kforge=$PWD/$kforge ;; esac
export KFORGE_BIN=${KFORGE_BIN:-$kforge}
cmd=${1:-}; shift || true
. "$root/tools/python_env.sh"
case $cmd in gpu|status|report|finish|refilter) kforge_python "$root" || exit 2 ;; esac
py=${KFORGE_PYTHON_BIN:-}

die() { echo "synth_dataset: $*" >&2; exit 2; }
need_dataset() { [ -f "$work/dataset.h5" ] || die "$work/dataset.h5 is missing: run 'tools/dataset/synth_dataset.sh prepare' first"; }

case $cmd in
  prepare)
    [ -x "$kforge" ] || die "$kforge not built (tools/build.sh), or set KFORGE"
    mkdir -p "$work"
    "$kforge" synth --config "${SYNTH_CONFIG:-configs/synth.yaml}" --out "$work" ${SYNTH_TARGET:+--target $SYNTH_TARGET}
    du -h "$work/dataset.h5"
    ;;
  gpu)
    budget=${1:?usage: synth_dataset.sh gpu BUDGET_S}
    need_dataset
    : "${OUT:?set OUT (the device tool sets it)}"
    out=$(mktemp -d)  # only the archive goes under $OUT: the device returns few files
    mkdir -p "$out/gpu"
    cp "$work"/gpu/part-*.jsonl "$out/gpu/" 2>/dev/null || true  # resume from what earlier calls measured
    # SYNTH_KEEP (on the GPU host): a folder that outlives the call while the machine stays warm. The
    # parts are kept there at the end, per dataset, and the next call starts from them where they
    # hold more rows than the carried ones (a call made before the last one's archive was collected).
    keep=""
    if [ -n "${SYNTH_KEEP:-}" ]; then
      keep="$SYNTH_KEEP/$(md5sum "$work/dataset.h5" | cut -c1-16)"
      mkdir -p "$keep"
      for f in "$keep"/part-*.jsonl; do
        [ -f "$f" ] || continue
        b="$out/gpu/$(basename "$f")"
        if [ ! -f "$b" ] || [ "$(wc -l < "$f")" -gt "$(wc -l < "$b")" ]; then
          cp "$f" "$b"; echo "synth_dataset: $(basename "$f"): $(wc -l < "$f") rows from $keep"
        fi
      done
    fi
    dev=${SYNTH_DEVICE:-cuda}
    export PYTHONUNBUFFERED=1
    if [ "$dev" = cpu ]; then ngpu=1; else ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true); fi
    [ "${ngpu:-0}" -ge 1 ] || die "no GPU found (nvidia-smi -L); SYNTH_DEVICE=cpu tries the steps without one"
    if [ -n "${SYNTH_PROCS:-}" ]; then  # fewer processes than GPUs, or several in the CPU mode
      [[ "$SYNTH_PROCS" =~ ^[1-9][0-9]*$ ]] || die "SYNTH_PROCS must be a positive integer, not '$SYNTH_PROCS'"
      [ "$dev" = cpu ] || [ "$SYNTH_PROCS" -le "$ngpu" ] || die "SYNTH_PROCS=$SYNTH_PROCS: only $ngpu GPU(s) here"
      ngpu=$SYNTH_PROCS
    fi
    archive() {
      tar czf "$OUT/synth.tgz" -C "$out" .
      if [ -n "$keep" ]; then cp "$out"/gpu/part-*.jsonl "$keep/" 2>/dev/null || true; fi
    }
    trap archive EXIT
    # The rows not measured yet, in dataset order, in one contiguous block per GPU; and the cores in
    # as many groups (both hardware threads of a core in the same group), so that the timing
    # processes never share a CPU.
    lists=$(mktemp -d)
    "$py" - "$work/dataset.h5" "$out/gpu" "$lists" "$ngpu" <<'EOF'
import os, sys
sys.path.insert(0, "tools/dataset")
import synth_gpu
import synth_gpu.placement
dataset, parts, lists, g = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
_, tasks = synth_gpu.export_tasks(dataset, "all/1")  # kforge's reading of the dataset
done = {(r["id"], r.get("graph_hash")) for r in synth_gpu.read_records(parts)}
left = [t["id"] for t in tasks if (t["id"], t["graph_hash"]) not in done]
synth_gpu.placement.write_gpu_lists(left, g, lists)
print(f"synth_dataset: {len(left)} of {len(tasks)} rows left; {g} GPU(s), about {len(left) // g} rows each")
EOF
    for k in $(seq 0 $((ngpu - 1))); do
      pin=()
      if [ "$ngpu" -ge 2 ]; then
        pin=(taskset -c "$(cat "$lists/cpus-$k.txt")")
        [ "$dev" = cpu ] || pin=(env CUDA_VISIBLE_DEVICES=$k "${pin[@]}")
      fi
      own="SYNTH_ARGS_$k"
      "${pin[@]}" "$py" tools/dataset/synth_gpu.py "$work/dataset.h5" --shard "$k/$ngpu" --ids "$lists/ids-$k.txt" \
        --out "$out/gpu" --time-budget-s "$budget" --device "$dev" ${SYNTH_ARGS:-} ${!own:-} > "$out/log-$k.txt" 2>&1 &
    done
    wait || true
    rm -rf "$lists"
    grep -h "wrote\|time (s)" "$out"/log-*.txt || true
    ;;
  collect)
    at=${1:?usage: synth_dataset.sh collect FILES_AT}
    [ -f "$at/synth.tgz" ] || die "$at/synth.tgz is missing (the gpu step's archive)"
    need_dataset
    mkdir -p "$work/gpu" "$work/logs"
    tmp=$(mktemp -d); tar xzf "$at/synth.tgz" -C "$tmp"
    # A call's part files hold every earlier row too (they were carried there): take them whole,
    # unless the one here has more rows (an older call's archive collected after a newer one).
    for f in "$tmp"/gpu/part-*.jsonl; do
      [ -f "$f" ] || continue
      b="$work/gpu/$(basename "$f")"
      if [ -f "$b" ] && [ "$(wc -l < "$b")" -gt "$(wc -l < "$f")" ]; then
        echo "synth_dataset: kept $b ($(wc -l < "$b") rows; the archive's has $(wc -l < "$f"))"
      else
        cp "$f" "$b"
      fi
    done
    # One log folder per collected call, numbered in the order collected (two calls collected in the
    # same second keep their own logs).
    # The same archive collected twice keeps one folder (the report would count its rows twice).
    same=""
    if ls "$tmp"/log-*.txt >/dev/null 2>&1; then
      for d in "$work"/logs/call-*; do
        [ -d "$d" ] || continue
        if cmp -s <(cd "$tmp" && cat log-*.txt) <(cd "$d" && cat log-*.txt 2>/dev/null); then same=$d; break; fi
      done
    fi
    if [ -n "$same" ]; then
      echo "synth_dataset: this archive's logs were collected before, as $(basename "$same")"
    else
      n=1; while [ -e "$work/logs/call-$(printf %03d $n)" ]; do n=$((n + 1)); done
      logs="$work/logs/call-$(printf %03d $n)"; mkdir -p "$logs"
      for f in "$tmp"/log-*.txt; do [ -f "$f" ] && cp "$f" "$logs/"; done
    fi
    rm -rf "$tmp"
    "$root/tools/dataset/synth_dataset.sh" status
    ;;
  status)
    need_dataset
    "$py" - "$work" <<'EOF'
import collections, os, sys
sys.path.insert(0, "tools/dataset")
import synth_gpu  # the part-file reader and kforge's tasks (no torch is imported)
work = sys.argv[1]
_, tasks = synth_gpu.export_tasks(os.path.join(work, "dataset.h5"), "all/1")
ids = {t["id"] for t in tasks}
rows = {r["id"]: r["status"] for r in synth_gpu.read_records(os.path.join(work, "gpu")) if r["id"] in ids}  # last wins
c = collections.Counter("ok" if s == "ok" else "rejected" for s in rows.values())
print(f"synth_dataset: {len(rows)} of {len(ids)} rows measured (ok {c['ok']}, rejected {c['rejected']}); {len(ids) - len(rows)} left")
EOF
    ;;
  report)
    # tools/dataset/synth_dataset.sh report [FIRST-LAST] [JSON]: the collected calls (all, or a range of
    # call numbers), from their logs; JSON in the format of tools/bench/results/.
    range=${1:-}; json=${2:-}
    "$py" tools/dataset/synth_calls_report.py "$work" ${range:+--calls "$range"} ${json:+--json "$json"} \
      --commit "${KFORGE_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || true)}"
    ;;
  finish)
    need_dataset
    ls "$work"/gpu/part-*.jsonl >/dev/null 2>&1 || die "no part files under $work/gpu: nothing measured yet"
    dst=${SYNTH_DEST:-datasets/synth}
    mkdir -p "$dst"
    allow=""; [ "${SYNTH_DEVICE:-cuda}" = cpu ] && allow=--allow-cpu
    "$py" tools/dataset/synth_gpu.py --merge "$work/dataset.h5" $allow \
      --results "${SYNTH_RESULTS:-tools/bench/results/$(date -u +%Y-%m-%d)_synth_dataset_h200.json}"
    # What the dataset promises (no duplicates, disjoint splits, baselines in the window, one machine
    # and method, TF32 off, ...): nothing is shipped when a check fails.
    "$py" tools/dataset/synth_check.py "$work/dataset.h5" ${SYNTH_CHECK_ARGS:-} || die "the merged dataset fails its checks (above); nothing shipped"
    "$kforge" tasks export "$work/dataset.h5" --status ok --format jsonl --out "$dst/tasks.jsonl"
    cp "$work"/summary.txt "$work"/summary.json "$dst/"
    cp "$work"/*.png "$dst/" 2>/dev/null || true
    # HDF5 cannot compress variable-length strings: the shipped file is xz-compressed as a whole.
    # `kforge tasks` reads it as it is; h5py wants `unxz -k datasets/synth/dataset.h5.xz` first.
    xz -9 -T0 -c "$work/dataset.h5" > "$dst/dataset.h5.xz"
    xz -9 -T0 -f "$dst/tasks.jsonl"
    commit=${KFORGE_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || true)}
    # How long the GPU stage took, from the collected calls' logs (none: the README says nothing of it).
    calls=${SYNTH_CALLS_RESULTS:-tools/bench/results/$(date -u +%Y-%m-%d)_synth_dataset_calls_h200.json}
    if ls -d "$work"/logs/call-* >/dev/null 2>&1; then
      "$py" tools/dataset/synth_calls_report.py "$work" --json "$calls" --commit "$commit" | tail -3
    else
      calls=""
    fi
    "$py" tools/dataset/synth_readme.py "$dst/summary.json" "$dst/README.md" --commit "$commit" ${calls:+--calls-json "$calls"}
    du -h "$dst"/*
    "$kforge" tasks count "$work/dataset.h5" --status ok
    ;;
  refilter)
    checks=${1:?usage: synth_dataset.sh refilter JSONL (kforge tasks sensitivity --out JSONL)}
    dst=${SYNTH_DEST:-datasets/synth}
    [ -f "$dst/dataset.h5.xz" ] || die "$dst/dataset.h5.xz is missing: nothing shipped to re-filter"
    tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
    xz -dc "$dst/dataset.h5.xz" > "$tmp/dataset.h5"
    cp "$dst/summary.json" "$dst/summary.txt" "$tmp/"
    "$py" tools/dataset/synth_refilter.py "$tmp/dataset.h5" --from "$checks" ${SYNTH_REFILTER_ARGS:-}
    "$py" tools/dataset/synth_check.py "$tmp/dataset.h5" ${SYNTH_CHECK_ARGS:-} || die "the re-filtered dataset fails its checks (above); nothing shipped"
    "$kforge" tasks export "$tmp/dataset.h5" --status ok --format jsonl --out "$dst/tasks.jsonl"
    cp "$tmp/summary.json" "$tmp/summary.txt" "$dst/"
    xz -9 -T0 -c "$tmp/dataset.h5" > "$dst/dataset.h5.xz"
    xz -9 -T0 -f "$dst/tasks.jsonl"
    xz -9 -T0 -c "$checks" > "$dst/input_checks.jsonl.xz"  # the per-task figures the rows were decided on
    # The README keeps the commit the GPU stage was merged at (KFORGE_COMMIT overrides) and the
    # calls' report of the GPU stage (SYNTH_CALLS_RESULTS, default the latest one).
    commit=${KFORGE_COMMIT:-$(sed -n 's/.*merged and written at kforge commit \([0-9a-f]*\).*/\1/p' "$dst/README.md" | head -1)}
    calls=${SYNTH_CALLS_RESULTS:-$(ls tools/bench/results/*_synth_dataset_calls_h200.json 2>/dev/null | tail -1)}
    "$py" tools/dataset/synth_readme.py "$dst/summary.json" "$dst/README.md" ${commit:+--commit "$commit"} ${calls:+--calls-json "$calls"}
    du -h "$dst"/*
    "$kforge" tasks count "$dst/dataset.h5.xz" --status ok
    ;;
  *)
    awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"  # the header above
    [ -z "$cmd" ] || die "unknown step '$cmd'"
    ;;
esac
