#!/usr/bin/env bash
# Sets up, builds and runs kforge's main job. For now: the C++ reference of a sample task, run and
# timed on the GPU when one is present (else on the CPU). Extra arguments go to `kforge task run`.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/tools/setup.sh"
"$root/tools/build.sh"
build=${KFORGE_BUILD_DIR:-$root/build}
device=cpu
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then device=cuda; fi
"$build/tools/kforge" task run linear_relu --device "$device" --config "$root/configs/eval.yaml" "$@"
