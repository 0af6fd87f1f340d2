#!/usr/bin/env bash
# Configures and builds kforge (Ninja, Release, ccache when present) into $KFORGE_BUILD_DIR
# (default: <repo>/build), against the libtorch of the Python tools/python_env.sh picks (the venv
# tools/setup.sh made, or KFORGE_PYTHON_BIN), which is also the tests' Python3_EXECUTABLE. A build
# folder configured with another Python is configured again.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${KFORGE_BUILD_DIR:-$root/build}
. "$root/tools/python_env.sh"
kforge_python "$root" || exit 1
py=$KFORGE_PYTHON_BIN
# KFORGE_TORCH_PREFIX: given by tools/test.sh, which installs other packages into the venv meanwhile.
torch_prefix=${KFORGE_TORCH_PREFIX:-$("$py" -c 'import torch; print(torch.utils.cmake_prefix_path)')}
cuda_args=()
if ! command -v nvcc >/dev/null 2>&1 && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  # No system toolkit: use the pip wheels tools/setup.sh installed.
  cu=$("$py" -c 'import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], "cu13"))')
  cuda_args=(-DCUDAToolkit_ROOT="$cu")
fi
configured=$(sed -n 's/^Python3_EXECUTABLE:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
if [ ! -f "$build/build.ninja" ] || [ "$configured" != "$py" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$torch_prefix" -DPython3_EXECUTABLE="$py" "${cuda_args[@]}" ${CMAKE_ARGS:-}
fi
jobs=${KFORGE_JOBS:-$(nproc)}
cmake --build "$build" -j "$jobs"
