#!/bin/bash
# What the open issues still need from a GPU host, in one call (see the issues' notes):
#   bash .gpu/run.sh configure && bash tools/bench/run_pending_gpu.sh OUTDIR [steps...]
# steps (default all): build audit counters rollout serve_load synth_calibration
#   audit             issue 5: the exploit audit with race_missing_sync (added after the last run)
#   counters          issue 4: hardware counters through CUPTI's range profiler (EvalOptions::counters)
#   rollout           issue 6: a GPU worker killed mid-request costs that request only
#   serve_load        issue 6: GPU actions under load (verifies per minute, GPU utilisation, A/A)
#   synth_calibration issue 7: the synthesizer's GPU stage on 200 tasks (tasks per minute)
# Each step has a time limit; logs go to OUTDIR.
set -uo pipefail
out=${1:?usage: run_pending_gpu.sh OUTDIR [steps]}; shift
steps=${*:-build audit counters rollout serve_load synth_calibration}
b=${KFORGE_BUILD_DIR:-build-gpu}
mkdir -p "$out"
export LD_LIBRARY_PATH=/opt/project-deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export KFORGE_SOURCE_DIR=$PWD PYTHONUNBUFFERED=1
# Python packages the host lacks (pyzmq, msgpack, h5py, PyYAML) come from .gpu/wheels, which
# .gpu/run.sh unpacks into /tmp/site: prepare them here with ../shared/gpu/prepare.sh.
[ -d /tmp/site ] && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
for s in $steps; do
  t0=$(date +%s)
  case $s in
    build) cmake --build "$b" -j "$(nproc)" --target kforge kforge-worker kforge-compile-worker anticheat_audit_gpu_tests \
             evaluator_gpu_tests rollout_server_gpu_tests >"$out/build.txt" 2>&1 ;;
    audit) KFORGE_AUDIT_OUT="$out/anticheat_audit.json" timeout 300 "$b/tests/anticheat_audit_gpu_tests" >"$out/audit.txt" 2>&1 ;;
    counters) timeout 120 "$b/tests/evaluator_gpu_tests" --gtest_filter='*Counters*:*ProfileAndKernelActivity*' >"$out/counters.txt" 2>&1 ;;
    rollout) timeout 180 "$b/tests/rollout_server_gpu_tests" >"$out/rollout_gpu.txt" 2>&1 ;;
    serve_load)
      nvidia-smi --query-gpu=utilization.gpu,clocks.sm --format=csv -l 1 >"$out/util.csv" 2>&1 & u=$!
      timeout 240 python3 tools/bench/serve_bench.py --kforge "$b/tools/kforge" --gpu --episodes 64 --rounds 3 --json >"$out/serve_load.txt" 2>&1
      kill $u 2>/dev/null ;;
    synth_calibration)
      d=$out/synth; mkdir -p "$d"
      timeout 60 "$b/tools/kforge" synth --config configs/synth.yaml --out "$d" --target 400 --quiet >"$out/synth.txt" 2>&1 &&
        timeout 420 python3 tools/synth_gpu.py "$d/dataset.h5" --shard 0/1 --out "$d/gpu" --limit 200 --time-budget-s 400 >>"$out/synth.txt" 2>&1 ;;
    *) echo "unknown step $s"; continue ;;
  esac
  echo "step $s: rc $? in $(( $(date +%s) - t0 )) s" | tee -a "$out/steps.txt"
done
