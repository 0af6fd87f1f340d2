#!/bin/bash
# Builds the shipped dataset (issue 7) over several device calls: the CPU stage here, the GPU stage
# on the GPU host in as many calls as it takes (each resumes), then the merge and the shipped files
# here. The work folder is .gpu/synth (git-ignored, carried to the GPU host with `carry: [".gpu"]`).
#
#   tools/synth_dataset.sh prepare                 here: kforge synth (CPU stage) into .gpu/synth
#   bash tools/synth_dataset.sh gpu BUDGET_S       on the GPU host: the GPU stage for BUDGET_S seconds,
#                                                  every visible GPU one shard of 2; archive in $OUT/synth.tgz
#   tools/synth_dataset.sh collect FILES_AT        here: unpack a call's archive into .gpu/synth (parts, logs)
#   tools/synth_dataset.sh status                  here: rows measured and left
#   tools/synth_dataset.sh finish                  here: merge, summary and plots, JSONL export, and the
#                                                  shipped files under datasets/synth/ (dataset.h5.xz)
#
# Environment: KFORGE (the kforge binary, default build/tools/kforge), SYNTH_WORK (default .gpu/synth),
# SYNTH_CONFIG (default configs/synth.yaml), SYNTH_TARGET (kforge synth --target, default the
# config's target_tasks), SYNTH_DEVICE (cuda; cpu only to try the steps without a GPU, at check
# dims), SYNTH_ARGS (more synth_gpu.py options), SYNTH_DEST (default datasets/synth),
# SYNTH_RESULTS (default tools/bench/results/DATE_synth_dataset_h200.json), SYNTH_KEEP (gpu step: a
# folder on the GPU host where the parts outlive the call, for a next call made before collecting).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
work=${SYNTH_WORK:-.gpu/synth}
kforge=${KFORGE:-build/tools/kforge}
shards=2  # fixed, so that part-0/part-1 mean the same rows whether one GPU or two did them
cmd=${1:-}; shift || true

die() { echo "synth_dataset: $*" >&2; exit 2; }
need_dataset() { [ -f "$work/dataset.h5" ] || die "$work/dataset.h5 is missing: run 'tools/synth_dataset.sh prepare' first"; }

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
    if [ "$dev" = cpu ]; then ngpu=0; else ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true); fi
    archive() {
      tar czf "$OUT/synth.tgz" -C "$out" .
      if [ -n "$keep" ]; then cp "$out"/gpu/part-*.jsonl "$keep/" 2>/dev/null || true; fi
    }
    trap archive EXIT
    if [ "${ngpu:-0}" -ge 2 ]; then
      # One shard per GPU at once, each process on its own half of the cores (both hardware threads
      # of a core on the same side), so that the two timing processes never share a CPU.
      mapfile -t halves < <(python3 - <<'EOF'
import collections, subprocess
cores = collections.defaultdict(list)
for line in subprocess.run(["lscpu", "-p=CPU,CORE"], capture_output=True, text=True).stdout.splitlines():
    if line and not line.startswith("#"):
        cpu, core = line.split(",")[:2]
        cores[int(core)].append(int(cpu))
keys = sorted(cores)
for half in (keys[:len(keys) // 2], keys[len(keys) // 2:]):
    print(",".join(str(c) for k in half for c in cores[k]))
EOF
)
      for k in 0 1; do
        CUDA_VISIBLE_DEVICES=$k taskset -c "${halves[$k]}" python3 tools/synth_gpu.py "$work/dataset.h5" --shard $k/$shards \
          --out "$out/gpu" --time-budget-s "$budget" ${SYNTH_ARGS:-} > "$out/log-$k.txt" 2>&1 &
      done
      wait
    else
      python3 tools/synth_gpu.py "$work/dataset.h5" --shard all/$shards --out "$out/gpu" --time-budget-s "$budget" \
        --device "$dev" ${SYNTH_ARGS:-} > "$out/log-0.txt" 2>&1 || true
    fi
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
    n=1; while [ -e "$work/logs/call-$(printf %03d $n)" ]; do n=$((n + 1)); done
    logs="$work/logs/call-$(printf %03d $n)"; mkdir -p "$logs"
    for f in "$tmp"/log-*.txt; do [ -f "$f" ] && cp "$f" "$logs/"; done
    rm -rf "$tmp"
    "$root/tools/synth_dataset.sh" status
    ;;
  status)
    need_dataset
    python3 - "$work" <<'EOF'
import collections, os, sys
sys.path.insert(0, "tools")
import synth_gpu  # its dataset and part-file readers (torch is imported lazily, not here)
work = sys.argv[1]
_, cols = synth_gpu.read_dataset(os.path.join(work, "dataset.h5"), ["id"])
ids = set(cols["id"])
rows = {r["id"]: r["status"] for r in synth_gpu.read_records(os.path.join(work, "gpu")) if r["id"] in ids}  # last wins
c = collections.Counter("ok" if s == "ok" else "rejected" for s in rows.values())
print(f"synth_dataset: {len(rows)} of {len(ids)} rows measured (ok {c['ok']}, rejected {c['rejected']}); {len(ids) - len(rows)} left")
EOF
    ;;
  finish)
    need_dataset
    ls "$work"/gpu/part-*.jsonl >/dev/null 2>&1 || die "no part files under $work/gpu: nothing measured yet"
    dst=${SYNTH_DEST:-datasets/synth}
    mkdir -p "$dst"
    allow=""; [ "${SYNTH_DEVICE:-cuda}" = cpu ] && allow=--allow-cpu
    python3 tools/synth_gpu.py --merge "$work/dataset.h5" $allow \
      --results "${SYNTH_RESULTS:-tools/bench/results/$(date -u +%Y-%m-%d)_synth_dataset_h200.json}"
    "$kforge" tasks export "$work/dataset.h5" --status ok --format jsonl --out "$dst/tasks.jsonl"
    cp "$work"/summary.txt "$work"/summary.json "$dst/"
    cp "$work"/*.png "$dst/" 2>/dev/null || true
    # HDF5 cannot compress variable-length strings: the shipped file is xz-compressed as a whole.
    # `kforge tasks` reads it as it is; h5py wants `unxz -k datasets/synth/dataset.h5.xz` first.
    xz -9 -T0 -c "$work/dataset.h5" > "$dst/dataset.h5.xz"
    xz -9 -T0 -f "$dst/tasks.jsonl"
    du -h "$dst"/*
    "$kforge" tasks count "$work/dataset.h5" --status ok
    ;;
  *)
    sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'
    [ -z "$cmd" ] || die "unknown step '$cmd'"
    ;;
esac
