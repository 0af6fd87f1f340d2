#!/usr/bin/env bash
# Sets up (tools/setup.sh), builds (tools/build.sh) and runs every test through ctest: the
# GoogleTest suites and the pytest suites. Tests labelled `gpu` run where a CUDA device is present
# and are reported as skipped (with the reason) where none is. Extra arguments go to ctest.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/tools/setup.sh"
"$root/tools/build.sh"
build=${KFORGE_BUILD_DIR:-$root/build}
ctest --test-dir "$build" --output-on-failure -j "${KFORGE_JOBS:-$(nproc)}" "$@"
