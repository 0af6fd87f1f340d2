#!/usr/bin/env bash
# The GPU half of issue 29 ("the real KernelBench"), in one command on the GPU host, from the repository root:
#
#   bash tools/bench/kernelbench_gpu.sh OUTDIR          # e.g. $OUT in a device call (carry: [".gpu"])
#   KFORGE_PYTHON_BIN=python3 KB_KEEP=/tmp/kforge-kb-keep bash tools/bench/kernelbench_gpu.sh $OUT   # on the GPU host
#
# 1. the GPU stage (tools/dataset/synth_gpu.py) on the imported tasks: probe, the artifact check against
#    the module at its own size (--artifact-check auto: trace tiers A, B, A1, M), eager and
#    torch.compile baselines; one process per visible GPU, each on its own cores;
# 2. with the time left, KernelBench's own timing beside kforge's (tools/bench/kernelbench_timing.py);
# 3. OUTDIR/kernelbench_gpu.tgz (the stage's part files, the timing rows and record, the logs) and
#    OUTDIR/summary.txt. Nothing else is written under OUTDIR (the device returns few files).
# Every step resumes: run the same command again until summary.txt says nothing is left.
#
# Inputs (made on a CPU machine beforehand, tools/dataset/SYNTH_GPU.md "KernelBench"):
#   KB_IMPORT   the import folder (dataset.h5, imported.jsonl; export-gpu.jsonl and specs/, which kforge
#               wrote there beforehand, spare a kforge build here)            default .gpu/kb_import
#   KB_CHECKOUT the KernelBench files the timing needs (src/kernelbench/timing.py) default .gpu/kb
#   KB_RESUME   an earlier call's archive unpacked (gpu/, timing/)            default .gpu/kb_out
#   KB_KEEP     a folder on the host that outlives the call while the machine stays warm (optional):
#               the next call starts from it where it holds more rows than KB_RESUME
#   KB_BUDGET_S seconds for the whole call (default 500: within a 600-s device call with the start-up)
#   KB_RESTAGE  REASON[,REASON...][@DATE]: stage again the rows a record written before DATE (ISO, UTC)
#               rejected for one of these reasons, e.g. after a check changed:
#               KB_RESTAGE="eager_failed,nondeterministic_gpu@2026-12-07T13:30:00Z"
#   KB_STAGE_ARGS, KB_TIMING_ARGS  more options of either tool (the timing runs with --max-variant-s 0.5:
#               a task past 5 ms gets fewer than 100 trials, at least 10; KB_TIMING_ARGS="--max-variant-s 0" for all 100)
#   KFORGE_BIN  the kforge binary (default build/tools/kforge, else build-gpu/tools/kforge, which
#               `bash .gpu/run.sh build` makes on a GPU host); the interpreter: tools/python_env.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
die() { echo "kernelbench_gpu: $*" >&2; exit 2; }
out=${1:?usage: tools/bench/kernelbench_gpu.sh OUTDIR}
. tools/python_env.sh && kforge_python "$root" || exit 2
py=$KFORGE_PYTHON_BIN
. tools/bench/kforge_env.sh  # KFORGE_BIN (this tree's build, else build-gpu's) and the GPU host's libraries
imp=${KB_IMPORT:-.gpu/kb_import}; kb=${KB_CHECKOUT:-.gpu/kb}; resume=${KB_RESUME:-.gpu/kb_out}
[ -f "$imp/dataset.h5" ] || die "$imp/dataset.h5 is missing (the import: tools/bench/kernelbench_import.py)"
[ -f "$kb/src/kernelbench/timing.py" ] || die "$kb/src/kernelbench/timing.py is missing (the KernelBench files)"
# What kforge would say about the dataset, written beforehand where kforge is built (SYNTH_GPU.md,
# "KernelBench"): with both files no kforge build is needed on the GPU host.
exported=() specs=()
[ -f "$imp/export-gpu.jsonl" ] && exported=(--exported "$imp/export-gpu.jsonl")
[ -d "$imp/specs" ] && specs=(--specs "$imp/specs")
if [ ${#exported[@]} -eq 0 ] || [ ${#specs[@]} -eq 0 ]; then
  [ -x "$KFORGE_BIN" ] || die "no $imp/export-gpu.jsonl and specs/, and no kforge binary at $KFORGE_BIN (set KFORGE_BIN)"
fi
budget=${KB_BUDGET_S:-500}
t0=$(date +%s)
mkdir -p "$out"
work=${KB_KEEP:-$(mktemp -d)}
mkdir -p "$work/gpu" "$work/timing" "$work/logs"
# Resume: the carried rows, unless the kept ones (a warm machine's last call) hold more.
for sub in gpu timing; do
  for f in "$resume/$sub"/*.jsonl; do
    [ -f "$f" ] || continue
    b="$work/$sub/$(basename "$f")"
    if [ ! -f "$b" ] || [ "$(wc -l < "$f")" -gt "$(wc -l < "$b")" ]; then cp "$f" "$b"; fi
  done
done
archive() {
  tar czf "$out/kernelbench_gpu.tgz" -C "$work" gpu timing logs
  [ -f "$work/summary.txt" ] && cp "$work/summary.txt" "$out/summary.txt"
  echo "kernelbench_gpu: wrote $out/kernelbench_gpu.tgz ($(du -h "$out/kernelbench_gpu.tgz" | cut -f1)) in $(( $(date +%s) - t0 )) s"
}
trap archive EXIT
dev=${KB_DEVICE:-cuda}  # cpu: a smoke test of this script on tiny tasks (a stand-in timing.py), not a measurement
if [ "$dev" = cpu ]; then ngpu=1; else ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true); fi
[ "${ngpu:-0}" -ge 1 ] || die "no GPU found (nvidia-smi -L)"
lists=$(mktemp -d)
# The rows each step has left, in one contiguous block per GPU, and the cores in as many groups
# (both hardware threads of a core in one group), as tools/dataset/synth_dataset.sh does.
plan() {  # plan stage|timing: writes $lists/ids-K.txt and cpus-K.txt; prints how many are left
  "$py" - "$1" "$imp/dataset.h5" "$work" "$lists" "$ngpu" "${exported[@]}" <<'EOF'
import glob, json, os, sys
sys.path.insert(0, "tools/dataset")
import synth_gpu
import synth_gpu.placement
import synth_gpu.records
from synth_gpu.common import read_exported
step, dataset, work, lists, g = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
_, tasks = read_exported(sys.argv[7]) if len(sys.argv) > 7 else synth_gpu.export_tasks(dataset, "all/1")
recs = synth_gpu.pick_records(synth_gpu.read_records(os.path.join(work, "gpu")))
stale = synth_gpu.records.restage_rule(os.environ.get("KB_RESTAGE", ""))  # KB_RESTAGE: rows to stage again
if step == "stage":
    left = [t["id"] for t in tasks if t["id"] not in recs or recs[t["id"]].get("graph_hash") != t["graph_hash"]
            or stale(recs[t["id"]])]
else:  # timing: the tasks the stage kept, not timed yet
    timed = set()
    for p in glob.glob(os.path.join(work, "timing", "kernelbench_timing-*.jsonl")):
        timed |= {json.loads(x)["id"] for x in open(p) if x.endswith("\n")}
    left = [t["id"] for t in tasks if recs.get(t["id"], {}).get("status") == "ok" and t["id"] not in timed]
synth_gpu.placement.write_gpu_lists(left, g, lists)
print(len(left))
EOF
}
# one process per GPU: run_each NAME TOOL ARGS... (ids-K and --shard K/G appended)
run_each() {
  local name=$1; shift
  for k in $(seq 0 $((ngpu - 1))); do
    [ -s "$lists/ids-$k.txt" ] || continue
    pin=()
    [ "$ngpu" -ge 2 ] && pin=(env "CUDA_VISIBLE_DEVICES=$k" taskset -c "$(cat "$lists/cpus-$k.txt")")
    "${pin[@]}" "$py" "$@" --device "$dev" --shard "$k/$ngpu" --ids "$lists/ids-$k.txt" > "$work/logs/$name-$k-$t0.txt" 2>&1 &
  done
  wait || true
}
left_s() { echo $(( budget - ($(date +%s) - t0) )); }

n=$(plan stage)
echo "kernelbench_gpu: $ngpu GPU(s); GPU stage: $n task(s) left"
if [ "$n" -gt 0 ]; then
  # shellcheck disable=SC2086
  run_each stage tools/dataset/synth_gpu.py "$imp/dataset.h5" --out "$work/gpu" --imported "$imp/imported.jsonl" \
    "${exported[@]}" "${specs[@]}" \
    --time-budget-s "$(left_s)" ${KB_STAGE_ARGS:-}
  grep -h "wrote\|time (s)\|error" "$work"/logs/stage-*-"$t0".txt || true
fi
n_stage=$(plan stage)
n=$(plan timing)
echo "kernelbench_gpu: GPU stage: $n_stage left; KernelBench timing: $n task(s) left, $(left_s) s of the budget left"
if [ "$n" -gt 0 ] && [ "$(left_s)" -gt 60 ]; then
  # shellcheck disable=SC2086
  run_each timing tools/bench/kernelbench_timing.py --kernelbench "$kb" --dataset "$imp/dataset.h5" --gpu "$work/gpu" \
    "${exported[@]}" \
    --out "$work/timing" --time-budget-s "$(left_s)" --max-variant-s 0.5 ${KB_TIMING_ARGS:-}
  grep -h "wrote\|error" "$work"/logs/timing-*-"$t0".txt || true
fi
"$py" tools/bench/kernelbench_timing.py --kernelbench "$kb" --dataset "$imp/dataset.h5" --gpu "$work/gpu" "${exported[@]}" \
  --out "$work/timing" --device "$dev" --record-only > "$work/logs/record-$t0.txt" 2>&1 || true
n_timing=$(plan timing)
{
  echo "kernelbench_gpu: call at $(date -u +%FT%TZ), $ngpu GPU(s) ($(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | sort -u | tr '\n' ' '))"
  echo "GPU stage: $n_stage task(s) left; KernelBench timing: $n_timing task(s) left$([ "$n_stage$n_timing" = 00 ] && echo ': all done')"
  "$py" - "$work/gpu" <<'EOF'
import collections, sys
sys.path.insert(0, "tools/dataset")
import synth_gpu
recs = synth_gpu.pick_records(synth_gpu.read_records(sys.argv[1]))
print("stage statuses:", dict(collections.Counter(r["status"] for r in recs.values())))
art = collections.Counter((r.get("checks") or {}).get("artifact", {}).get("tier", "-") + (
    ":checked" if (r.get("checks") or {}).get("artifact", {}).get("checked") else "") for r in recs.values())
print("artifact checks by tier:", dict(art))
EOF
  tail -n 1 "$work/logs/record-$t0.txt"
} | tee "$work/summary.txt"
rm -rf "$lists"
