#!/usr/bin/env bash
# Sets up (tools/setup.sh), builds (tools/build.sh), checks the tree's hygiene (tools/lint.sh:
# clang-format, ruff, clang-tidy; a finding fails the run) and runs every test through ctest: the
# GoogleTest suites and the pytest suites. Tests labelled `gpu` run where a CUDA device is present
# and are reported as skipped (with the reason) where none is. Before ctest, tools/fuzz.sh builds
# the parsers' libFuzzer targets and runs each for KFORGE_FUZZ_SECONDS (12); a crash fails the run.
# It needs only the Debian packages, so it runs in the background from there on, beside the rest of
# the setup (on a fresh machine mostly downloads) and the build, and its output is printed when it
# ends: on a cold 2-core runner its ~170 CPU-s build and 36 s of fuzzing then cost little wall time.
# KFORGE_FUZZ=0 skips that step. The trainer adapters' packages (setup.sh's `trainers` step) install
# beside the build too, and the tests wait for them. Under CI=true a build folder configured here leaves out the
# benchmarks of tools/bench, which no test runs (KFORGE_BUILD_BENCH=OFF). Extra arguments go to
# ctest.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
t_start=$(date +%s)
took() { echo "test.sh: $1 at $(($(date +%s) - t_start)) s"; }
"$root/tools/setup.sh" debs venv
fuzz_pid="" trainers_pid=""
# Background steps run in process groups of their own, stopped whole if this script ends early.
trap '[ -z "$fuzz_pid" ] || kill -- -"$fuzz_pid" 2>/dev/null || true; [ -z "$trainers_pid" ] || kill -- -"$trainers_pid" 2>/dev/null || true' EXIT
if [ "${KFORGE_FUZZ:-1}" != 0 ]; then
  fuzz_log=$(mktemp)
  setsid "$root/tools/fuzz.sh" </dev/null >"$fuzz_log" 2>&1 &
  fuzz_pid=$!
fi
"$root/tools/setup.sh" python cuda
# The trainer adapters' packages (downloads, about 4 min fresh) install beside the build: only the
# adapter tests need them, and nothing is built against them. torch is imported once before, so
# that the build never imports it while pip rewrites the venv.
. "$root/tools/python_env.sh"
kforge_python "$root"
KFORGE_TORCH_PREFIX=$("$KFORGE_PYTHON_BIN" -c 'import torch; print(torch.utils.cmake_prefix_path)')
export KFORGE_TORCH_PREFIX
took "set-up (Debian packages, venv, torch, Python packages)"
trainers_log=$(mktemp)
# Bounded: a resolver that spins (pip 23.2 did, for over an hour) fails the run here with its log,
# not at CI's limit with nothing printed. KFORGE_TRAINERS_TIMEOUT_S (1800).
setsid timeout "${KFORGE_TRAINERS_TIMEOUT_S:-1800}" "$root/tools/setup.sh" trainers </dev/null >"$trainers_log" 2>&1 &
trainers_pid=$!
if [ "${CI:-}" = true ]; then
  export CMAKE_ARGS="-DKFORGE_BUILD_BENCH=OFF ${CMAKE_ARGS:-}"
fi
"$root/tools/build.sh"
took "build"
build=${KFORGE_BUILD_DIR:-$root/build}
"$root/tools/lint.sh"
took "lint"
trainers_rc=0
wait "$trainers_pid" || trainers_rc=$?
trainers_pid=""
cat "$trainers_log"
rm -f "$trainers_log"
[ "$trainers_rc" != 124 ] || echo "test.sh: the trainer packages' install took over ${KFORGE_TRAINERS_TIMEOUT_S:-1800} s" >&2
[ "$trainers_rc" = 0 ] || exit "$trainers_rc"
took "trainer packages"
if [ -n "$fuzz_pid" ]; then
  rc=0
  wait "$fuzz_pid" || rc=$?
  fuzz_pid=""
  cat "$fuzz_log"
  rm -f "$fuzz_log"
  [ "$rc" = 0 ] || exit "$rc"
  took "fuzzing"
fi
ctest --test-dir "$build" --output-on-failure -j "${KFORGE_JOBS:-$(nproc)}" "$@"
