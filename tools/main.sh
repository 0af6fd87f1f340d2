#!/usr/bin/env bash
# Sets up, builds and runs kforge's main job: `kforge demo`, one whole episode of a scripted policy
# on a sample task (write the candidate, compile, verify, profile, submit), judged on the GPU, with
# every turn and the reward's evidence printed. Without a CUDA device it says so in one line and
# exits non-zero. Extra arguments go to `kforge demo` (e.g. --policy linear_relu_tiled).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/tools/setup.sh"
"$root/tools/build.sh"
build=${KFORGE_BUILD_DIR:-$root/build}
export KFORGE_SOURCE_DIR="$root"
"$build/tools/kforge" demo --config "$root/configs/env.yaml" --reward-config "$root/configs/reward.yaml" \
  --eval-config "$root/configs/eval.yaml" "$@"
