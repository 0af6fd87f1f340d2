#!/bin/bash
# What the open issues still need from a GPU host, in one call (see the issues' notes):
#   bash .gpu/run.sh configure && bash tools/bench/run_pending_gpu.sh OUTDIR [steps...]
# steps (default: build new_gpu): build gputests audit overhead aa coverage new_gpu serve_load synth_calibration
# reference_vs_baseline sample_baselines python
#   gputests          every gpu-labelled test but the adapters' (step adapters) (ctest -L gpu, verbose): the anti-cheat audit
#                     (JSON in OUTDIR/anticheat_audit.json), hardware counters through CUPTI's range
#                     profiler (evaluator and episode tests), a GPU worker killed mid-request
#                     (rollout server test)
#   probe             the call-classification probe (call_probe_gpu_tests; JSON in OUTDIR/call_probe.json): nothing a
#                     kernel observes tells a verified call from a timed one
#   precision         precision below the contract refused in nearly every request (precision_probe_gpu_tests; JSON in
#                     OUTDIR/precision_probe.json)
#   sensitivity       every input matters at the tasks' full sizes on the GPU (kforge tasks sensitivity --dims full):
#                     a random sample of KFORGE_SENS_SAMPLE (400) dataset tasks in KFORGE_SENS_BUDGET_S (120 s),
#                     one JSON line per task in OUTDIR/sensitivity_full.jsonl
#   audit             the anti-cheat audit alone (every exploit refused, every control accepted)
#   sequential        kforge_eval_bench sequential: the sequential stopping rule replayed on 240 long GPU timing runs
#                     (A/A, 1.04x, 1.06x, 1.45x copies; JSON in OUTDIR/eval_sequential.json), and its judge test
#                     (evaluator_gpu_tests EvaluatorGpu.SequentialRule*)
#   shapes            issue 30 on the GPU: a task's other shapes (ShapesGpu.*: a tuned kernel refused at another shape, a general
#                     one passing, a plan of numbers, the extra trials' cost side by side; OUTDIR/shapes.txt)
#   overhead_ab       issue 31: kforge_eval_bench overhead of a base tree and this one, alternating on one host
#                     (tools/bench/overhead_ab.sh; pack the base first: overhead_ab.sh --pack COMMIT; the base
#                     builds in about a minute; KFORGE_AB_ROUNDS rounds (2); record OUTDIR/ab/overhead_ab.json)
#   ctest_r           the tests whose names match KFORGE_CTEST_R (ctest -R, verbose; built by the build step):
#                     a change's own GPU tests without the whole suite (OUTDIR/ctest_r.txt, ctest_r.xml)
#   timing_gpu        the timing stage's GPU tests (reference_gpu_tests TimingGpu.*: a context lost while timing is the
#                     candidate's runtime_error, not kforge's; OUTDIR/timing_gpu.txt)
#   history           issue 30's candidate history on the GPU (episode_gpu_tests HistoryGpuTest.*: improve, regress,
#                     restore, rewarded by the best version under the option, judged again first; OUTDIR/history.txt)
#   warm              the rollout server's GPU tests (rollout_server_gpu_tests): a queued verify's candidate compiled
#                     on the compile pool while the GPU is busy (scheduler.warm_compiles on and off), a GPU worker
#                     killed mid-request (OUTDIR/warm.txt)
#   shapes_cost       issue 30: kforge_eval_bench shapes, what the other shapes cost per verify on the sample tasks, today's
#                     kinds and a `large` shape at each budget of KFORGE_LARGE_BYTES (2e9,8e9,32e9), side by side
#                     (OUTDIR/eval_shapes_cost.json)
#   overhead, aa      kforge_eval_bench overhead (harness GPU time per verify) and A/A on softmax_rows (20 runs)
#   aa_ab             the A/A with 3 and 2 buffer sets
#   aa_ahead          issue 31: softmax_rows's A/A with the next timed call prepared ahead off and on,
#                     alternating twice (KFORGE_AHEAD_RUNS requests each, default 6): checks per pair, spread
#   aa_rse            the A/A (20 runs) under the former noise target, timing.target_rse 0.005
#   aa_again, aa_off  the A/A once more (the noise of the A/A itself), and with every dynamic check off
#   cold_start        tools/bench/cold_start.sh: kforge eval's cold wall time split into its phases
#   coverage          kforge_robustness_coverage on the shipped dataset (robustness draws usable),
#                     up to 400 tasks in KFORGE_COVERAGE_BUDGET_S (default 330 s; about 1.8 s a task);
#                     KFORGE_COVERAGE_SKIP=K goes on after the first K tasks of the same sample
#   conditioning      issue 31: where the robustness conditioning's time goes (once per task in a worker, before its first
#                     verify): kforge_robustness_coverage --split on over the shipped dataset's sample for
#                     KFORGE_COND_BUDGET_S (90) s (OUTDIR/conditioning_split.json, conditioning.txt)
#   new_gpu           the counter tests (EvaluatorGpu.Counter*), the synth GPU stage's fused checks
#                     kernel (python.synth_gpu_fused), and profile()'s cost with the default counter
#                     list, 5 metrics in 6 passes since the sixth session (JSON in
#                     OUTDIR/eval_profile_counters_default.json)
#   serve_load        GPU actions under load (verifies per minute, GPU utilisation, A/A)
#   serve_pairs       issue 31: the load bench over the sample tasks' 31 passing candidates (--pairs samples),
#                     64 episodes of verify + submit, each judging a new source (--fresh-sources on), with the
#                     old lane settings (--sequential off --warm off) and today's (--sequential on --warm on):
#                     judged candidates per GPU-hour, where the lanes' time goes (kernels, harness GPU work, timing,
#                     the rest), GPU utilisation (OUTDIR/util_pairs_ARM.csv); KFORGE_PAIRS_ARMS (`off:off on:on`) the
#                     arms as SEQUENTIAL:WARM (`off:on` isolates the sequential rule); KFORGE_PAIRS_EPISODES (64) episodes,
#                     KFORGE_PAIRS_TIMEOUT_S (280) s per arm
#   synth_calibration the synthesizer's GPU stage on 200 tasks (tasks per minute)
#   reference_vs_baseline  the C++ eager reference (what the reward times) against the dataset's
#                     stored eager_ms (Python eager, synth_gpu; and again now) on 40 kept tasks: the shipped
#                     datasets/synth/dataset.h5.xz, or else .gpu/synth merged into a temporary copy
#   sample_baselines  eager and torch.compile baselines of the 13 sample tasks by the dataset's tool
#                     and method (tools/dataset/sample_baselines.py pack, synth_gpu.py, --merge); then, here:
#                     tools/dataset/sample_baselines.py apply OUTDIR/samples/dataset.h5
#   adapters          the trainer adapters' reward-tier episodes (python.adapters_gpu: Gymnasium, its
#                     vector form, SkyRL; python.verifiers_adapter_gpu) and the report's stored-candidate
#                     run (python.report_gpu), then tools/bench/adapter_overhead*.py; the packages the
#                     host lacks come as wheels in .whl/ (carry it; tools/bench/gpu_wheels.sh fetches them).
#                     KFORGE_ADAPTER_TESTS: a ctest -R regex instead, run without the overhead benches
#                     verl has its own step (verl): ray's wheel is over the 64 MiB a call carries
#   imported          kforge tasks import of tests/tools/import_modules/level1-3 (import speed), each
#                     imported task's TorchScript reference run on the GPU (kforge task run --device cuda),
#                     and the reference's per-call overhead against the graph twins of the same ops
#                     (kforge_eval_bench reference --device cuda, on make_imported_tasks.py's tasks)
#   imported_baselines the imported test modules' eager and torch.compile baselines by the dataset's GPU
#                     stage (synth_gpu on OUTDIR/imp/dataset.h5, then --merge): what serving them needs
#   verl              verl's reward-tier episodes on the GPU (python.verl_adapter_gpu) and its per-step overhead
#                     (tools/bench/adapter_overhead_verl.py --only verl) with verl, a pruned ray and
#                     the rest of its imports from .verl/site.tar.xz (tools/bench/gpu_verl_bundle.sh; carry .verl)
#   ray_serve         issue 32: a Ray-started kforge serve per GPU node behind kforge_client.ray's router, played by a
#                     trainer-side client over the 31 passing sample candidates (tools/bench/ray_serve_gpu.py), with ray
#                     from .ray/site.tar.xz (tools/bench/gpu_ray_bundle.sh; carry .ray); OUTDIR/ray_serve.txt and the record
#   baseline_slice    issue 32: tools/dataset/baseline_ray.py (kforge baseline) through Ray over this host's GPUs on the
#                     shipped dataset for KFORGE_BASELINE_BUDGET_S (240) s: rows per GPU-hour against the shipped run's
#                     (OUTDIR/baseline_ray_summary.json); carry .ray
#   imported_eval     the test modules imported, baselined by the GPU stage, served, and judged by
#                     kforge-evaluate --report with stored candidates (python.imported_eval_gpu; its
#                     listing, rows and report in OUTDIR/imported_eval)
#   extension         issue 28 on the GPU: launch attribution (launch_origin_tests), the extension kind end to end
#                     (extension_eval_gpu_tests: both honest formats, every entry of anticheat/corpus/extension/,
#                     ATen/cuBLAS by config), its episode (EpisodeGpuTest.AnExtension*) and the build's sandbox
#                     and compile figures (extension_build_tests; OUTDIR/extension.txt, verbose), the split's
#                     kernels launched from their cubin (SplitLaunchGpu.*); KFORGE_EXTENSION_TESTS a ctest -R regex instead
#   extbench          issue 28's compile figures (kforge_extension_build_bench, KFORGE_EXTBENCH_REPEATS (3) builds, KFORGE_EXTBENCH_ARGS more options (--no-unsplit)
#                     each, --jobs 8; JSON in OUTDIR/extension_build_bench.json) and the linkers the host has
#   kernelbench       issue 29: tools/bench/kernelbench_gpu.sh over the real KernelBench import (.gpu/kb_import and .gpu/kb,
#                     made here as tools/dataset/SYNTH_GPU.md "KernelBench" says; carry .gpu): the GPU stage, then
#                     KernelBench's own timing, resumable in KB_KEEP (/tmp/kforge-kb-keep) on a warm host, budget
#                     KFORGE_KB_BUDGET_S (480); OUTDIR/kb/kernelbench_gpu.tgz and summary.txt
#   kernelbench_report issue 29: after `kernelbench` finished the stage on this host, tools/bench/kernelbench_report.sh:
#                     the stage's rows merged, the measured rows served, datasets/kernelbench_candidates replayed
#                     over every served task, the report with KernelBench's table per level (OUTDIR/kb_report/)
#   python            the interpreter the steps run and its torch (OUTDIR/python.txt)
# Each step has a time limit; logs go to OUTDIR, archived into OUTDIR.tgz after every step (and copied into the
# device call's $OUT as NAME_steps.tgz where $OUT is set: a call cut at its limit keeps what ran). A step written
# STEP:NEED_S runs only while NEED_S seconds of KFORGE_CALL_LIMIT_S are left (for a device call's limit).
# Python is KFORGE_PYTHON_BIN (tools/python_env.sh): the project's venv, or on a GPU host without one the
# python3 that .gpu/run.sh uses.
set -uo pipefail
out=${1:?usage: run_pending_gpu.sh OUTDIR [steps]}; shift
steps=${*:-build new_gpu}
b=${KFORGE_BUILD_DIR:-build-gpu}
export KFORGE_BIN=${KFORGE_BIN:-$PWD/$b/tools/kforge}  # what tools/synth_gpu/ asks for tasks and writes through
mkdir -p "$out"; out=$(cd "$out" && pwd)
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
gpu_tests="draw_kernel_gpu_tests check_kernel_gpu_tests reference_gpu_tests evaluator_gpu_tests anticheat_audit_gpu_tests
  episode_gpu_tests rollout_server_gpu_tests tolerance_gpu_tests speed_of_light_gpu_tests
  imported_task_gpu_tests call_probe_gpu_tests precision_probe_gpu_tests call_bench_gpu_tests"
export LD_LIBRARY_PATH=/opt/project-deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export KFORGE_SOURCE_DIR=$PWD PYTHONUNBUFFERED=1
# Python packages the host lacks (pyzmq, msgpack, h5py, PyYAML) come from .gpu/wheels, which
# .gpu/run.sh unpacks into /tmp/site: prepare them here with ../shared/gpu/prepare.sh.
[ -d /tmp/site ] && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
. "$root/tools/python_env.sh"
kforge_python "$root" || exit 2
py=$KFORGE_PYTHON_BIN
# The A/A on softmax_rows/fused: aa_softmax TIMEOUT_S RUNS OUT_NAME [eval_bench options...]
aa_softmax() {
  local limit=$1 runs=$2 name=$3; shift 3
  timeout "$limit" "$b/tools/kforge_eval_bench" aa --task softmax_rows --candidate datasets/samples/candidates/softmax_rows/fused \
    --runs "$runs" --out "$out/$name" "$@"
}
# The test modules of levels 1-3 imported as tasks: import_test_modules OUT_DIR
import_test_modules() {
  KFORGE_PYTHON_BIN=$py timeout 120 "$b/tools/kforge" tasks import --format kernelbench tests/tools/import_modules/level1 \
    tests/tools/import_modules/level2 tests/tools/import_modules/level3 --out "$1"
}
# The packages the host lacks, from .whl/ (tools/bench/gpu_wheels.sh), into /tmp/site (on PYTHONPATH)
install_wheels() {
  if ls .whl/*.whl >/dev/null 2>&1 && [ ! -f /tmp/site/.kforge_wheels ]; then
    "$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
      >"$out/wheels.txt" 2>&1 && touch /tmp/site/.kforge_wheels
    export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
  fi
}
# ray with its cluster binaries and what its core imports beyond the image, from .ray/ (tools/bench/gpu_ray_bundle.sh;
# carry .ray), into /tmp/site_ray once per host
unpack_ray() {
  [ -d /tmp/site_ray/ray ] || { mkdir -p /tmp/site_ray && tar xJf .ray/site.tar.xz -C /tmp/site_ray; }
}
t_call=$(date +%s)
for s in $steps; do
  # STEP:NEED_S runs STEP only while NEED_S seconds of KFORGE_CALL_LIMIT_S (counted from this script's
  # start) are left: a device call cut at its limit still returns the archive of the steps that ran
  need=${s#*:}; s=${s%%:*}
  if [ -n "${KFORGE_CALL_LIMIT_S:-}" ] && [ "$need" != "$s" ]; then
    left=$(( KFORGE_CALL_LIMIT_S - ($(date +%s) - t_call) ))
    if [ "$left" -lt "$need" ]; then
      echo "step $s: skipped, $left s of the call left (needs $need)" | tee -a "$out/steps.txt"
      continue
    fi
  fi
  t0=$(date +%s)
  case $s in
    build) cmake --build "$b" -j "$(nproc)" --target kforge kforge-full kforge-worker kforge-compile-worker kforge_eval_bench \
             kforge_robustness_coverage $gpu_tests >"$out/build.txt" 2>&1 ;;
    probe) KFORGE_PROBE_OUT="$out/call_probe.json" timeout 400 "$b/tests/call_probe_gpu_tests" >"$out/call_probe.txt" 2>&1 ;;
    precision) KFORGE_PRECISION_OUT="$out/precision_probe.json" timeout 500 "$b/tests/precision_probe_gpu_tests" \
                 >"$out/precision_probe.txt" 2>&1 ;;
    sensitivity) timeout "${KFORGE_SENS_BUDGET_S:-120}" "$b/tools/kforge-full" tasks sensitivity datasets/synth/dataset.h5.xz \
                   --device cuda --dims full --sample "${KFORGE_SENS_SAMPLE:-400}" --ablation-trials 16 \
                   --out "$out/sensitivity_full.jsonl" >"$out/sensitivity.txt" 2>&1 ;;
    audit) KFORGE_AUDIT_OUT="$out/anticheat_audit.json" timeout 400 "$b/tests/anticheat_audit_gpu_tests" >"$out/audit.txt" 2>&1 ;;
    sequential) timeout 240 "$b/tools/kforge_eval_bench" sequential --requests 60 --pairs 300 --out "$out/eval_sequential.json" \
                  >"$out/sequential.txt" 2>&1
                timeout 120 "$b/tests/evaluator_gpu_tests" --gtest_filter='EvaluatorGpu.SequentialRule*' >>"$out/sequential.txt" 2>&1 ;;
    shapes) timeout 240 "$b/tests/evaluator_gpu_tests" --gtest_filter='ShapesGpu.*' >"$out/shapes.txt" 2>&1 ;;
    timing_gpu) timeout 120 "$b/tests/reference_gpu_tests" --gtest_filter='TimingGpu.*' >"$out/timing_gpu.txt" 2>&1 ;;
    history) timeout 300 "$b/tests/episode_gpu_tests" --gtest_filter='HistoryGpuTest.*' >"$out/history.txt" 2>&1 ;;
    warm) timeout 200 "$b/tests/rollout_server_gpu_tests" >"$out/warm.txt" 2>&1 ;;
    shapes_cost) timeout 420 "$b/tools/kforge_eval_bench" shapes --repeats 3 --large-bytes "${KFORGE_LARGE_BYTES:-2e9,8e9,32e9}" \
                   --out "$out/eval_shapes_cost.json" >"$out/shapes_cost.txt" 2>&1 ;;
    overhead) timeout 150 "$b/tools/kforge_eval_bench" overhead --repeats 3 --out "$out/eval_overhead.json" >"$out/overhead.txt" 2>&1 ;;
    aa) aa_softmax 200 20 eval_aa.json >"$out/aa.txt" 2>&1 ;;
    aa_ab) for v in 3 2; do
             aa_softmax 100 12 "eval_aa_pool$v.json" --address-pool $v >>"$out/aa_ab.txt" 2>&1
           done ;;
    aa_ahead)  # issue 31: the next call prepared ahead on a side stream, off and on, alternating in one build
      for r in 1 2; do
        for v in off on; do
          aa_softmax 100 "${KFORGE_AHEAD_RUNS:-6}" "eval_aa_ahead_${v}_$r.json" --prepare-ahead $v >>"$out/aa_ahead.txt" 2>&1
        done
      done ;;
    aa_again) aa_softmax 200 20 eval_aa_again.json >"$out/aa_again.txt" 2>&1 ;;
    aa_off) aa_softmax 200 20 eval_aa_off.json --anticheat off >"$out/aa_off.txt" 2>&1 ;;
    aa_rse) aa_softmax 150 20 eval_aa_rse0.005.json --target-rse 0.005 >"$out/aa_rse.txt" 2>&1 ;;
    cold_start) KFORGE_COLD_N=5 timeout 170 bash tools/bench/cold_start.sh "$b" "$out/cold" >"$out/cold_start.txt" 2>&1 ;;
    coverage) timeout 560 "$b/tools/kforge_robustness_coverage" datasets/synth/dataset.h5.xz --n 400 \
                --skip "${KFORGE_COVERAGE_SKIP:-0}" --budget-s "${KFORGE_COVERAGE_BUDGET_S:-330}" \
                --json "$out/robustness_coverage.json" >"$out/coverage.txt" 2>&1 ;;
    conditioning) timeout 200 "$b/tools/kforge_robustness_coverage" datasets/synth/dataset.h5.xz --n 400 \
                    --budget-s "${KFORGE_COND_BUDGET_S:-90}" --split on --json "$out/conditioning_split.json" >"$out/conditioning.txt" 2>&1 ;;
    gputests) KFORGE_AUDIT_OUT="$out/anticheat_audit.json" timeout 420 ctest --test-dir "$b" -L gpu -V --timeout 300 \
                -E "python\.(adapters_gpu|verl_adapter_gpu|verifiers_adapter_gpu|report_gpu|imported_eval_gpu)|CallProbeGpu|PrecisionProbeGpu" \
                --output-junit "$out/gputests.xml" >"$out/gputests.txt" 2>&1 ;;
    overhead_ab)  # issue 31: the verify overhead of .gpu/ab_base.tgz's tree and this one, alternating on this host
      timeout 560 bash tools/bench/overhead_ab.sh "$b" "$out/ab" "${KFORGE_AB_ROUNDS:-2}" >"$out/overhead_ab.txt" 2>&1 ;;
    ctest_r)  # the tests whose names match KFORGE_CTEST_R (built by the build step), e.g. a change's own GPU tests
      timeout 450 ctest --test-dir "$b" -R "${KFORGE_CTEST_R:?set KFORGE_CTEST_R}" -V --timeout 300 \
        --output-junit "$out/ctest_r.xml" >"$out/ctest_r.txt" 2>&1
      r=$?
      # A crashed test's frames (tests/support/crash_backtrace.cpp), demangled
      if grep -q KFORGE_BACKTRACE "$out/ctest_r.txt"; then
        grep -A64 KFORGE_BACKTRACE "$out/ctest_r.txt" | c++filt >"$out/ctest_r_frames.txt" 2>&1
      fi
      (exit $r) ;;
    new_gpu)
      timeout 400 ctest --test-dir "$b" -R "EvaluatorGpu.Counter|python.synth_gpu_fused" -V --timeout 300 >"$out/new_gpu.txt" 2>&1
      r=$?
      timeout 150 "$b/tools/kforge_eval_bench" profile --counters on --out "$out/eval_profile_counters_default.json" \
        >>"$out/new_gpu.txt" 2>&1 || r=$?
      (exit $r) ;;
    serve_load)
      nvidia-smi --query-gpu=utilization.gpu,clocks.sm --format=csv -l 1 >"$out/util.csv" 2>&1 & u=$!
      timeout 240 "$py" tools/bench/serve_bench.py --kforge "$b/tools/kforge" --gpu --episodes 64 --rounds 5 --json >"$out/serve_load.txt" 2>&1
      r=$?; kill $u 2>/dev/null; (exit $r) ;;
    serve_pairs)  # the old lane settings and today's, one after the other on the same host
      r=0
      # an arm is SEQUENTIAL:WARM; off:off the old settings (fixed timing budget, compiles on the GPU lane), on:on today's
      for arm in ${KFORGE_PAIRS_ARMS:-off:off on:on}; do
        seq=${arm%%:*} warm=${arm##*:}; lab=seq_$seq; [ "$seq" = "$warm" ] || lab=seq_${seq}_warm_$warm
        nvidia-smi --query-gpu=utilization.gpu,clocks.sm --format=csv -l 1 >"$out/util_pairs_$lab.csv" 2>&1 & u=$!
        timeout "${KFORGE_PAIRS_TIMEOUT_S:-280}" "$py" tools/bench/serve_bench.py --kforge "$b/tools/kforge" --gpu --pairs samples \
          --episodes "${KFORGE_PAIRS_EPISODES:-64}" --rounds 2 \
          --sequential "$seq" --warm "$warm" --fresh-sources on --label "pairs_$lab" --json >"$out/serve_pairs_$lab.txt" 2>&1 || r=$?
        kill $u 2>/dev/null
      done
      cp tools/bench/results/serve_bench_gpu_*_pairs_seq_*.json "$out/" 2>/dev/null  # the records, into the archive
      (exit $r) ;;
    synth_calibration)
      d=$out/synth; mkdir -p "$d"
      timeout 60 "$b/tools/kforge" synth --config configs/synth.yaml --out "$d" --target 400 --quiet >"$out/synth.txt" 2>&1 &&
        timeout 420 "$py" tools/dataset/synth_gpu.py "$d/dataset.h5" --shard 0/1 --out "$d/gpu" --limit 200 --time-budget-s 400 >>"$out/synth.txt" 2>&1 ;;
    reference_vs_baseline)
      ds=datasets/synth/dataset.h5.xz
      if [ ! -f "$ds" ]; then
        ds=$(mktemp -d)/dataset.h5
        cp .gpu/synth/dataset.h5 "$ds" &&
          "$py" tools/dataset/synth_gpu.py --merge "$ds" --out .gpu/synth/gpu --no-plots >"$out/merge.txt" 2>&1
      fi
      timeout 400 "$py" tools/bench/reference_vs_baseline.py "$ds" --kforge "$b/tools/kforge" --n 40 --python-now \
        --json "$out/reference_vs_baseline.json" >"$out/reference_vs_baseline.txt" 2>&1 ;;
    sample_baselines)
      d=$out/samples; mkdir -p "$d"
      "$py" tools/dataset/sample_baselines.py pack "$d" --kforge "$b/tools/kforge" >"$out/sample_baselines.txt" 2>&1 &&
        timeout 300 "$py" tools/dataset/synth_gpu.py "$d/dataset.h5" --out "$d/gpu" --time-budget-s 280 \
          >>"$out/sample_baselines.txt" 2>&1 &&
        "$py" tools/dataset/synth_gpu.py --merge "$d/dataset.h5" --out "$d/gpu" --no-plots >>"$out/sample_baselines.txt" 2>&1 ;;
    adapters)
      install_wheels
      timeout 420 ctest --test-dir "$b" -R "${KFORGE_ADAPTER_TESTS:-python\.(adapters_gpu|verl_adapter_gpu|verifiers_adapter_gpu|report_gpu)}" -V --timeout 400 \
        >"$out/adapters.txt" 2>&1
      r=$?
      if [ -z "${KFORGE_ADAPTER_TESTS:-}" ]; then  # the overhead benches, unless a chosen test set runs alone
        timeout 60 "$py" tools/bench/adapter_overhead.py --kforge "$b/tools/kforge" --rounds 50 >"$out/adapter_overhead.txt" 2>&1 || r=$?
        timeout 60 "$py" tools/bench/adapter_overhead_verl.py --kforge "$b/tools/kforge" --steps 2000 --only verifiers \
          >>"$out/adapter_overhead.txt" 2>&1 || r=$?
      fi
      (exit $r) ;;
    imported)
      import_test_modules "$out/imp" >"$out/imported.txt" 2>&1
      r=$?
      for t in "$out"/imp/tasks/*.yaml; do
        echo "== $(basename "$t" .yaml)" >>"$out/imported.txt"
        timeout 60 "$b/tools/kforge" task run "$t" --device cuda >>"$out/imported.txt" 2>&1 || { r=$?; echo "FAILED $t" >>"$out/imported.txt"; }
      done
      timeout 60 "$py" tests/data_synth/make_imported_tasks.py --out "$out/fixture" >>"$out/imported.txt" 2>&1 &&
        timeout 120 "$b/tools/kforge_eval_bench" reference --tasks "$out/fixture" --device cuda --calls 2000 \
          --out "$out/reference_overhead_cuda.json" >>"$out/imported.txt" 2>&1 || r=$?
      (exit $r) ;;
    verl)
      # verl and its imports beyond the image, ray pruned (tools/bench/gpu_verl_bundle.sh; carry .verl)
      rm -rf /tmp/site_verl && mkdir -p /tmp/site_verl && tar xJf .verl/site.tar.xz -C /tmp/site_verl
      r=$?
      PYTHONPATH=/tmp/site_verl${PYTHONPATH:+:$PYTHONPATH} timeout 300 ctest --test-dir "$b" -R "python\.verl_adapter_gpu" -V \
        --timeout 280 >"$out/verl.txt" 2>&1 || r=$?
      PYTHONPATH=/tmp/site_verl${PYTHONPATH:+:$PYTHONPATH} timeout 90 "$py" tools/bench/adapter_overhead_verl.py \
        --kforge "$b/tools/kforge" --steps 2000 --only verl >"$out/verl_overhead.txt" 2>&1 || r=$?
      (exit $r) ;;
    ray_serve)
      unpack_ray
      PYTHONPATH=/tmp/site_ray${PYTHONPATH:+:$PYTHONPATH} timeout 300 "$py" tools/bench/ray_serve_gpu.py --kforge "$b/tools/kforge" \
        --json >"$out/ray_serve.txt" 2>&1
      r=$?
      cp tools/bench/results/ray_serve_gpu_*.json "$out/" 2>/dev/null  # the record, into the archive
      (exit $r) ;;
    baseline_slice)
      # kforge baseline's engine over this host's GPUs through Ray, on a slice of the shipped dataset: rows per GPU-hour
      # against the shipped run's
      unpack_ray
      xz -dkc datasets/synth/dataset.h5.xz >/tmp/kforge_ds.h5 && rm -rf /tmp/kforge_bl &&
        PYTHONPATH=/tmp/site_ray${PYTHONPATH:+:$PYTHONPATH} timeout "$(( ${KFORGE_BASELINE_BUDGET_S:-240} + 90 ))" "$py" \
          tools/dataset/baseline_ray.py /tmp/kforge_ds.h5 --out /tmp/kforge_bl --time-budget-s "${KFORGE_BASELINE_BUDGET_S:-240}" \
          --summary "$out/baseline_ray_summary.json" >"$out/baseline_slice.txt" 2>&1 ;;
    imported_eval)
      install_wheels
      KFORGE_REPORT_OUT="$out/imported_eval" timeout 560 ctest --test-dir "$b" -R "python\.imported_eval_gpu" -V --timeout 540 \
        >"$out/imported_eval.txt" 2>&1 ;;
    imported_baselines)
      d=$out/imp; rm -rf "$d"
      import_test_modules "$d" >"$out/imported_baselines.txt" 2>&1 &&
        timeout 400 "$py" tools/dataset/synth_gpu.py "$d/dataset.h5" --out "$d/gpu" --time-budget-s 380 >>"$out/imported_baselines.txt" 2>&1 &&
        "$py" tools/dataset/synth_gpu.py --merge "$d/dataset.h5" --out "$d/gpu" --no-plots >>"$out/imported_baselines.txt" 2>&1 ;;
    extension) cmake --build "$b" -j "$(nproc)" --target launch_origin_tests extension_eval_gpu_tests episode_gpu_tests \
        extension_build_tests child_sandbox_tests >"$out/extension_build.txt" 2>&1
      timeout 480 ctest --test-dir "$b" -V --timeout 420 \
        -R "${KFORGE_EXTENSION_TESTS:-LaunchOrigin|ExtensionEvalGpu|SplitLaunchGpu|CubinSymbols|CudaSplit|NvrtcCubin|EpisodeGpuTest.AnExtension|ExtensionBuild|ExtensionCandidate|ChildSandbox}" \
        >"$out/extension.txt" 2>&1 ;;
    extbench) cmake --build "$b" -j "$(nproc)" --target kforge_extension_build_bench >"$out/extbench_build.txt" 2>&1
      { command -v ld.lld ld.gold ld.bfd; nproc; } >"$out/extbench_tools.txt" 2>&1
      timeout 400 "$b/tools/kforge_extension_build_bench" --repeats "${KFORGE_EXTBENCH_REPEATS:-3}" --jobs 8 ${KFORGE_EXTBENCH_ARGS:-} \
        --out "$out/extension_build_bench.json" >"$out/extbench.txt" 2>&1 ;;
    kernelbench)  # issue 29: the GPU stage and KernelBench's timing over the real import (.gpu/kb_import, .gpu/kb)
      KB_KEEP=${KB_KEEP:-/tmp/kforge-kb-keep} KB_BUDGET_S=${KFORGE_KB_BUDGET_S:-480} timeout 590 bash tools/bench/kernelbench_gpu.sh \
        "$out/kb" >"$out/kernelbench.txt" 2>&1 ;;
    kernelbench_report)  # issue 29: the stored candidates replayed over the imported set, into KernelBench's report
      timeout 400 bash tools/bench/kernelbench_report.sh .gpu/kb_import "${KB_KEEP:-/tmp/kforge-kb-keep}/gpu" "$out/kb_report" \
        >"$out/kernelbench_report.txt" 2>&1 ;;
    python) { echo "python: $py"; echo "PYTHONPATH: ${PYTHONPATH:-}"; timeout 120 "$py" -c \
                'import sys, torch; print("version:", sys.version.split()[0]); print("torch:", torch.__version__, torch.version.cuda)'
              } >"$out/python.txt" 2>&1 ;;
    *) echo "unknown step $s"; continue ;;
  esac
  rc=$?
  echo "step $s: rc $rc in $(( $(date +%s) - t0 )) s" | tee -a "$out/steps.txt"
  # the device returns few files: everything in one archive, refreshed after every step, and copied
  # into the device call's $OUT (where set) at once, so that a call cut at its limit still returns it
  tar czf "$out.tgz" -C "$(dirname "$out")" "$(basename "$out")"
  if [ -n "${OUT:-}" ] && [ -d "$OUT" ]; then cp "$out.tgz" "$OUT/$(basename "$out")_steps.tgz"; fi
done
