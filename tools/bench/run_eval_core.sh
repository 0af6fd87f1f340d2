#!/bin/bash
# The evaluation core's GPU figures, on a GPU host after `bash .gpu/run.sh build`:
#   bash tools/bench/run_eval_core.sh OUTDIR [steps...]
# steps (default all): compile overhead overhead_off gputests evaluator audit aa aa_off profile profile_counters (the _off
# ones with the dynamic anti-cheat checks off, to measure their cost). Each step has a time limit so one
# stuck step cannot eat the others; logs and JSON results go to OUTDIR.
set -uo pipefail
out=${1:?usage: run_eval_core.sh OUTDIR [steps]}; shift
steps=${*:-compile overhead overhead_off gputests evaluator audit aa aa_off profile profile_counters}
b=${KFORGE_BUILD_DIR:-build-gpu}
mkdir -p "$out"
export LD_LIBRARY_PATH=/opt/project-deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
for s in $steps; do
  t0=$(date +%s)
  case $s in
    compile) timeout 120 "$b/env/kforge_compile_bench" --rounds 2 --out "$out/nvrtc_compile.json" ${KFORGE_COMMIT:+--commit $KFORGE_COMMIT} >"$out/compile.txt" 2>&1 ;;
    overhead) timeout 150 "$b/tools/kforge_eval_bench" overhead --repeats 3 --out "$out/eval_overhead.json" >"$out/overhead.txt" 2>&1 ;;
    overhead_off) timeout 150 "$b/tools/kforge_eval_bench" overhead --repeats 3 --anticheat off --out "$out/eval_overhead_anticheat_off.json" >"$out/overhead_off.txt" 2>&1 ;;
    profile) timeout 150 "$b/tools/kforge_eval_bench" profile --out "$out/eval_profile.json" >"$out/profile.txt" 2>&1 ;;
    profile_counters) timeout 150 "$b/tools/kforge_eval_bench" profile --counters on --out "$out/eval_profile_counters.json" \
                        >"$out/profile_counters.txt" 2>&1 ;;
    audit) KFORGE_AUDIT_OUT="$out/anticheat_audit.json" timeout 300 "$b/tests/anticheat_audit_gpu_tests" >"$out/audit.txt" 2>&1 ;;
    gputests) for t in draw_kernel_gpu_tests check_kernel_gpu_tests reference_gpu_tests; do
                KFORGE_SOURCE_DIR="$PWD" timeout 120 "$b/tests/$t" >"$out/$t.txt" 2>&1; echo "$t rc $?" >>"$out/gputests_rc.txt"
              done ;;
    evaluator) timeout 200 "$b/tests/evaluator_gpu_tests" >"$out/evaluator_gpu_tests.txt" 2>&1 ;;
    aa) timeout 200 "$b/tools/kforge_eval_bench" aa --task gelu_scale_residual \
          --candidate datasets/samples/candidates/gelu_scale_residual/fused --runs 30 --out "$out/eval_aa.json" >"$out/aa.txt" 2>&1 ;;
    aa_off) timeout 200 "$b/tools/kforge_eval_bench" aa --task gelu_scale_residual --anticheat off \
          --candidate datasets/samples/candidates/gelu_scale_residual/fused --runs 30 --out "$out/eval_aa_anticheat_off.json" >"$out/aa_off.txt" 2>&1 ;;
    *) echo "unknown step $s"; continue ;;
  esac
  echo "step $s: rc $? in $(( $(date +%s) - t0 )) s" | tee -a "$out/steps.txt"
done
