#!/usr/bin/env bash
# Issue 29's report on the imported KernelBench set with stored candidates, in one command on a GPU host
# (after tools/bench/kernelbench_gpu.sh has run the GPU stage over the same import):
#
#   bash tools/bench/kernelbench_report.sh IMPORT_DIR STAGE_ROWS_DIR OUTDIR [CANDIDATES_DIR]
#
#   IMPORT_DIR      the import (dataset.h5, imported.jsonl, skipped.jsonl: tools/bench/kernelbench_import.py)
#   STAGE_ROWS_DIR  the GPU stage's part-*.jsonl (kernelbench_gpu.sh's KB_KEEP/gpu, or its archive's gpu/)
#   OUTDIR          gets rows.jsonl (kforge-evaluate's lines), report/ (report.md, report.json, plots),
#                   serve.log and evaluate.log
#   CANDIDATES_DIR  DIR/TASK/ holds the stored candidate of TASK (default datasets/kernelbench_candidates)
#
# 1. the stage's rows merged into a copy of IMPORT_DIR/dataset.h5 (synth_gpu.py --merge; the import is
#    left as it was);
# 2. `kforge serve` on every GPU of the host, serving only measured rows (tasks.serve_unmeasured false):
#    the import's skips and the stage's rejections are its health's `left_out`, which the report counts
#    in its denominator;
# 3. `kforge-evaluate --replay CANDIDATES_DIR` over every served task (split train, where the importer
#    puts KernelBench), one seed: a task with a stored candidate writes and submits it, every other
#    task submits nothing (a failure, as KernelBench counts an unsolved problem); --report writes the
#    report with KernelBench's level grouping and fast_p beside kforge's metrics.
#
# KB_ALLOW_NO_GPU=1 (a dry run on a CPU machine: every row served, nothing judged) checks the plumbing.
# Interpreter: tools/python_env.sh; kforge: KFORGE_BIN, else build/tools/kforge, else build-gpu/tools/kforge.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
die() { echo "kernelbench_report: $*" >&2; exit 2; }
[ $# -ge 3 ] || die "usage: tools/bench/kernelbench_report.sh IMPORT_DIR STAGE_ROWS_DIR OUTDIR [CANDIDATES_DIR]"
imp=$(cd "$1" && pwd) || die "$1: no such folder"
rows=$2 out=$3 cands=${4:-$root/datasets/kernelbench_candidates}
[ -f "$imp/dataset.h5" ] || die "$imp/dataset.h5 is missing (the import: tools/bench/kernelbench_import.py)"
[ -d "$cands" ] || die "$cands: no such folder (the stored candidates)"
. tools/python_env.sh && kforge_python "$root" || exit 2
py=$KFORGE_PYTHON_BIN
. tools/bench/kforge_env.sh  # KFORGE_BIN (this tree's build, else build-gpu's) and the GPU host's libraries
[ -x "$KFORGE_BIN" ] || die "no kforge at $KFORGE_BIN (set KFORGE_BIN)"
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
server=
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$work"' EXIT
cp -r "$imp" "$work/imp"
dry=${KB_ALLOW_NO_GPU:-0}
if [ "$dry" = 1 ]; then
  gpus=0 unmeasured=true no_gpu=(--allow-no-gpu)
  echo "kernelbench_report: dry run (KB_ALLOW_NO_GPU=1): every row served, nothing judged"
else
  [ -d "$rows" ] && ls "$rows"/part-*.jsonl >/dev/null 2>&1 || die "$rows holds no part-*.jsonl (the GPU stage's rows)"
  mkdir -p "$work/imp/gpu" && cp "$rows"/part-*.jsonl "$work/imp/gpu/"
  "$py" tools/dataset/synth_gpu.py --merge "$work/imp/dataset.h5" --out "$work/imp/gpu" --no-plots >"$out/merge.log" 2>&1 ||
    die "the merge failed: $(tail -3 "$out/merge.log")"
  gpus=-1 unmeasured=false no_gpu=()
fi
# The server's config (JSON is YAML): the import as its only dataset, no sample tasks.
printf '{"scheduler": {"gpus": %s}, "tasks": {"samples": false, "datasets": ["%s"], "serve_unmeasured": %s}}\n' \
  "$gpus" "$work/imp" "$unmeasured" >"$work/server.yaml"
ep=ipc://$work/kforge.sock
"$KFORGE_BIN" serve --config "$work/server.yaml" --bind "$ep" >"$work/serve.out" 2>"$out/serve.log" &
server=$!
for _ in $(seq 600); do  # the catalog of a few hundred imported tasks loads in seconds
  grep -q "listening on" "$work/serve.out" 2>/dev/null && break
  kill -0 "$server" 2>/dev/null || die "kforge serve exited: $(tail -3 "$out/serve.log")"
  sleep 0.2
done
grep -q "listening on" "$work/serve.out" || die "kforge serve did not start in 120 s"
head -1 "$work/serve.out"
t0=$(date +%s)
rc=0
PYTHONPATH=$root/tools/python${PYTHONPATH:+:$PYTHONPATH} "$py" -m kforge_client.evaluate --server "$ep" --replay "$cands" \
  --model "${KB_MODEL:-kforge-stored}" --split train --seeds 0 --concurrency "${KB_CONCURRENCY:-4}" --max-turns 4 \
  --timeout 900 "${no_gpu[@]}" --out "$out/rows.jsonl" --report "$out/report" 2>"$out/evaluate.log" || rc=$?
tail -2 "$out/evaluate.log"
echo "kernelbench_report: kforge-evaluate rc $rc in $(( $(date +%s) - t0 )) s; the report: $out/report/report.md"
exit $rc
