#!/usr/bin/env bash
# Issue 31: the verify overhead of two trees side by side on one GPU host (METHOD.md: a comparison is
# a ratio measured side by side in one run): a base tree packed here, and this tree, alternating
# base, new, base, new with `kforge_eval_bench overhead` (the shipped passing candidates, 5 trials,
# no timing; the harness's GPU work split by stage).
#
#   bash tools/bench/overhead_ab.sh --pack COMMIT      here: .gpu/ab_base.tgz (git archive of COMMIT),
#                                                      .gpu/ab.commits (COMMIT and HEAD, short: pack just
#                                                      before the device call, so that HEAD is the tree sent)
#   bash tools/bench/overhead_ab.sh BUILD OUTDIR [ROUNDS]
#                                                      on the GPU host, from the repository root, after
#                                                      `.gpu/run.sh configure` and run_pending_gpu.sh's build
#                                                      step (BUILD: that build folder, e.g. build-gpu)
#
# The base tree is built once per host in /tmp/kforge-ab-base (its .gpu is this tree's, so that
# .gpu/run.sh configures it alike; kforge-worker, kforge-compile-worker and kforge_eval_bench only,
# about a minute on 16 cores). Each round also times softmax_rows's fused candidate in
# KFORGE_AB_AA_RUNS (default 4) A/A requests on each side: the checks around the timed calls.
# OUTDIR gets overhead_{base,new}_R.json, aa_{base,new}_R.json and their .txt per round and
# overhead_ab.json, the record: per figure the mean over rounds on each side and new / base.
#
# KFORGE_AB_BENCHES (default `overhead aa`) chooses what each side runs per round, in order:
#   overhead, aa     as above
#   conditioning     kforge_robustness_coverage on the shipped dataset's first KFORGE_AB_COND_N (20) sample tasks
#                    (the same tasks on both sides; conditioning_{side}_R.json: each task's time and its conditions)
#   serve            the load bench over the sample tasks' passing candidates with today's lane settings, KFORGE_AB_SERVE_EPISODES (32)
#                    episodes of verify + submit on fresh sources (serve_{side}_R.txt and its record, copied)
# tools/bench/conditioning_ab.py OUTDIR ROUNDS summarises conditioning and serve.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
if [ "${1:-}" = --pack ]; then
  c=${2:?usage: tools/bench/overhead_ab.sh --pack COMMIT}
  mkdir -p .gpu
  git archive --format=tar.gz -o .gpu/ab_base.tgz "$c"
  echo "$(git rev-parse --short "$c") $(git rev-parse --short HEAD)" > .gpu/ab.commits
  echo "overhead_ab: .gpu/ab_base.tgz holds $(cut -d' ' -f1 .gpu/ab.commits) ($(du -h .gpu/ab_base.tgz | cut -f1))"
  exit 0
fi
b=${1:?usage: tools/bench/overhead_ab.sh BUILD OUTDIR [ROUNDS]}
out=${2:?usage: tools/bench/overhead_ab.sh BUILD OUTDIR [ROUNDS]}
rounds=${3:-2}
[ -f .gpu/ab_base.tgz ] && [ -f .gpu/ab.commits ] || {
  echo "overhead_ab: no .gpu/ab_base.tgz (run tools/bench/overhead_ab.sh --pack COMMIT where the repository is)" >&2
  exit 2
}
[ -x "$b/tools/kforge_eval_bench" ] || { echo "overhead_ab: no $b/tools/kforge_eval_bench (the build step first)" >&2; exit 2; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
. tools/python_env.sh && kforge_python "$root" || exit 2
base=/tmp/kforge-ab-base
benches=${KFORGE_AB_BENCHES:-overhead aa}
if [ ! -x "$base/build-gpu/tools/kforge_eval_bench" ]; then
  t0=$(date +%s)
  rm -rf "$base" && mkdir -p "$base" && tar xzf .gpu/ab_base.tgz -C "$base"
  ln -sfn "$root/.gpu" "$base/.gpu"
  OUT='' bash "$base/.gpu/run.sh" configure >"$out/ab_base_configure.txt" 2>&1
  cmake --build "$base/build-gpu" -j "$(nproc)" --target kforge-worker kforge-compile-worker kforge_eval_bench kforge \
    kforge_robustness_coverage >"$out/ab_base_build.txt" 2>&1
  echo "overhead_ab: base tree built in $(( $(date +%s) - t0 )) s"
fi
for r in $(seq 1 "$rounds"); do
  for side in base new; do
    if [ "$side" = base ]; then dir=$base bin=$base/build-gpu/tools/kforge_eval_bench; else dir=$root bin=$root/$b/tools/kforge_eval_bench; fi
    t0=$(date +%s)
    for bench in $benches; do
      case $bench in
        overhead)
          (cd "$dir" && KFORGE_SOURCE_DIR=$dir timeout 240 "$bin" overhead --repeats 2 --out "$out/overhead_${side}_$r.json") \
            >"$out/overhead_${side}_$r.txt" 2>&1 || echo "overhead_ab: $side round $r failed (see overhead_${side}_$r.txt)" ;;
        aa)  # the timed calls' checks: softmax_rows's fused candidate timed in KFORGE_AB_AA_RUNS requests (A/A)
          (cd "$dir" && KFORGE_SOURCE_DIR=$dir timeout 240 "$bin" aa --task softmax_rows --candidate datasets/samples/candidates/softmax_rows/fused \
            --runs "${KFORGE_AB_AA_RUNS:-4}" --out "$out/aa_${side}_$r.json") >"$out/aa_${side}_$r.txt" 2>&1 ||
            echo "overhead_ab: $side round $r's A/A failed (see aa_${side}_$r.txt)" ;;
        conditioning)
          (cd "$dir" && timeout 300 "${bin%/*}/kforge_robustness_coverage" datasets/synth/dataset.h5.xz --n "${KFORGE_AB_COND_N:-20}" \
            --budget-s 280 --json "$out/conditioning_${side}_$r.json") >"$out/conditioning_${side}_$r.txt" 2>&1 ||
            echo "overhead_ab: $side round $r's conditioning failed (see conditioning_${side}_$r.txt)" ;;
        serve)
          (cd "$dir" && KFORGE_SOURCE_DIR=$dir timeout 200 "$KFORGE_PYTHON_BIN" tools/bench/serve_bench.py --kforge "${bin%/*}/kforge" --gpu \
            --pairs samples --episodes "${KFORGE_AB_SERVE_EPISODES:-32}" --rounds 2 --sequential on --warm on --fresh-sources on --label "ab_${side}_$r" --json) \
            >"$out/serve_${side}_$r.txt" 2>&1 || echo "overhead_ab: $side round $r's load bench failed (see serve_${side}_$r.txt)"
          cp "$dir"/tools/bench/results/serve_bench_gpu_*_ab_"${side}_$r".json "$out/" 2>/dev/null || true ;;
        *) echo "overhead_ab: no bench $bench (overhead, aa, conditioning, serve)" >&2; exit 2 ;;
      esac
    done
    echo "overhead_ab: $side round $r in $(( $(date +%s) - t0 )) s"
  done
done
read -r base_commit new_commit < .gpu/ab.commits
case " $benches " in
  *" overhead "*) KFORGE_COMMIT="$base_commit vs $new_commit" "$KFORGE_PYTHON_BIN" tools/bench/overhead_ab.py "$out" "$rounds" ;;
esac
case " $benches " in
  *" conditioning "* | *" serve "*) KFORGE_COMMIT="$base_commit vs $new_commit" "$KFORGE_PYTHON_BIN" tools/bench/conditioning_ab.py "$out" "$rounds" ;;
esac
