#!/usr/bin/env bash
# Installs everything kforge needs on a fresh Debian or Ubuntu machine, idempotently:
#   - Debian packages (compilers, CMake, Ninja, ccache, ZeroMQ + cppzmq, msgpack-cxx, Eigen, HDF5,
#     yaml-cpp, GoogleTest, libseccomp, CLI11, nlohmann-json, xz for the shipped dataset);
#   - a Python virtual environment at $KFORGE_VENV (default: <repo>/.venv) holding the pinned
#     torch wheel (its libtorch is what kforge links against) and the Python test dependencies;
#   - the CUDA toolkit pieces the build needs (NVRTC, CUPTI, runtime, driver stub), taken from the
#     CUDA toolkit when one is installed, else from NVIDIA's pip wheels.
# Re-running it does nothing that is already done. Prints one line per step.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv=${KFORGE_VENV:-$root/.venv}
python=${KFORGE_PYTHON:-python3}   # the interpreter the venv is made from
torch_version=2.11.0          # the GPU hosts run torch 2.11.0+cu130: build against the same libtorch
sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"

debs=(build-essential cmake ninja-build ccache pkg-config git python3 python3-venv python3-pip
      libzmq3-dev cppzmq-dev libmsgpack-cxx-dev libeigen3-dev libhdf5-dev libyaml-cpp-dev
      libgtest-dev libgmock-dev libseccomp-dev libcli11-dev nlohmann-json3-dev xz-utils)
missing=()
for p in "${debs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "setup: Debian packages present"
fi

# A venv that can see an already-installed torch (a GPU host's, or one installed earlier) so the
# 4 GB wheel is not fetched twice.
if [ ! -x "$venv/bin/python" ]; then
  echo "setup: creating $venv"
  "$python" -m venv --system-site-packages "$venv"
fi
py="$venv/bin/python"
if ! "$py" -c "import torch, sys; sys.exit(0 if torch.__version__.split('+')[0] == '$torch_version' else 1)" 2>/dev/null; then
  echo "setup: installing torch==$torch_version (with its libtorch)"
  "$py" -m pip install -q "torch==$torch_version"
else
  echo "setup: torch $torch_version present"
fi
pydeps=(numpy safetensors pytest pyyaml pyzmq msgpack h5py matplotlib)
if ! "$py" -c "import numpy, safetensors, pytest, yaml, zmq, msgpack, h5py, matplotlib" 2>/dev/null; then
  echo "setup: installing Python packages: ${pydeps[*]}"
  "$py" -m pip install -q "${pydeps[@]}"
else
  echo "setup: Python packages present"
fi

# CUDA toolkit: libtorch's CMake config needs one (headers, NVRTC, CUPTI, cudart, the driver stub).
if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
  echo "setup: CUDA toolkit present ($( (command -v nvcc || echo /usr/local/cuda/bin/nvcc) ))"
else
  cuda_version=$("$py" -c "import torch; print(torch.version.cuda)")
  echo "setup: no CUDA toolkit found; installing CUDA $cuda_version pieces from NVIDIA's pip wheels"
  "$py" -m pip install -q "nvidia-cuda-nvcc==${cuda_version}.*" "nvidia-cuda-runtime==${cuda_version}.*" \
     "nvidia-cuda-nvrtc==${cuda_version}.*" "nvidia-cuda-cupti==${cuda_version}.*" "nvidia-cuda-cccl==${cuda_version}.*"
fi
echo "setup: done"
