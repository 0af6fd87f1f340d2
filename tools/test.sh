#!/usr/bin/env bash
# Sets up (tools/setup.sh), builds (tools/build.sh) and runs every test through ctest: the
# GoogleTest suites and the pytest suites. Tests labelled `gpu` run where a CUDA device is present
# and are reported as skipped (with the reason) where none is. Before ctest, tools/fuzz.sh builds
# the parsers' libFuzzer targets and runs each for KFORGE_FUZZ_SECONDS (12; about a minute in all
# with a warm ccache); a crash fails the run. KFORGE_FUZZ=0 skips that step. Under CI=true a build
# folder configured here leaves out the benchmarks of tools/bench, which no test runs
# (KFORGE_BUILD_BENCH=OFF). Extra arguments go to ctest.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/tools/setup.sh"
if [ "${CI:-}" = true ]; then
  export CMAKE_ARGS="-DKFORGE_BUILD_BENCH=OFF ${CMAKE_ARGS:-}"
fi
"$root/tools/build.sh"
build=${KFORGE_BUILD_DIR:-$root/build}
if [ "${KFORGE_FUZZ:-1}" != 0 ]; then
  "$root/tools/fuzz.sh"
fi
ctest --test-dir "$build" --output-on-failure -j "${KFORGE_JOBS:-$(nproc)}" "$@"
