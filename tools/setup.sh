#!/usr/bin/env bash
# Installs everything kforge needs on a fresh Debian or Ubuntu machine, idempotently:
#   - Debian packages (compilers, CMake, Ninja, ccache, ZeroMQ + cppzmq, HDF5,
#     yaml-cpp, GoogleTest, libseccomp, CLI11, nlohmann-json, xz for the shipped dataset);
#   - a Python virtual environment at $KFORGE_VENV (default: <repo>/.venv) holding the pinned
#     torch wheel (its libtorch is what kforge links against) and the Python test dependencies;
#     every script and test runs its python (tools/python_env.sh: KFORGE_PYTHON_BIN, when set,
#     overrides it; CMake's Python3_EXECUTABLE follows the same rules);
#   - the CUDA toolkit pieces the build needs (NVRTC, CUPTI, runtime, driver stub), taken from the
#     CUDA toolkit when one is installed, else from NVIDIA's pip wheels.
# Re-running it does nothing that is already done. Prints one line per step.
#   tools/setup.sh [STEP...]     steps: debs venv python trainers cuda (default: all five, in this order)
#
# The venv is isolated: it sees only what is installed in it, so a package missing from it fails
# here and in CI, not on the next fresh machine (a package once installed system-wide would hide it).
# KFORGE_VENV_SYSTEM_SITE=1 lets it see the base interpreter's packages instead (a host with the
# pinned torch preinstalled, to not fetch the 4 GB wheel again). An existing venv is kept and set to
# the mode asked (its pyvenv.cfg), then completed; one whose python no longer runs is made again.
# KFORGE_BASE_PYTHON (default python3) is the interpreter a new venv is made from.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv=${KFORGE_VENV:-$root/.venv}
py=$venv/bin/python
base_python=${KFORGE_BASE_PYTHON:-python3}   # only to make the venv; everything else runs the venv's
system_site=${KFORGE_VENV_SYSTEM_SITE:-0}
torch_version=2.11.0          # the GPU hosts run torch 2.11.0+cu130: build against the same libtorch
pyarrow_version=26.0.1        # tools/dataset/task_import reads CUDA-Agent-Ops parquet files with it
pip_version=26.3              # the venv's own pip (setup_venv says why)
# pip never prompts (a prompt in CI waits for ever) and gives up on a stalled download.
export PIP_NO_INPUT=1 PIP_DEFAULT_TIMEOUT=${PIP_DEFAULT_TIMEOUT:-60} PIP_DISABLE_PIP_VERSION_CHECK=1
sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"

setup_debs() {
  local debs=(build-essential cmake ninja-build ccache pkg-config git python3 python3-venv python3-pip
      libzmq3-dev cppzmq-dev libhdf5-dev zlib1g-dev libyaml-cpp-dev clang libclang-rt-dev clang-format clang-tidy
      libgtest-dev libgmock-dev libseccomp-dev libcli11-dev nlohmann-json3-dev libssl-dev xz-utils)
  local missing=() p
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
}

setup_venv() {
  local want flags cfg=$venv/pyvenv.cfg
  case $system_site in
    0) want=false; flags=() ;;
    1) want=true; flags=(--system-site-packages) ;;
    *) echo "setup: KFORGE_VENV_SYSTEM_SITE is 0 (an isolated venv) or 1 (it sees the system's packages), not '$system_site'" >&2
       exit 2 ;;
  esac
  if [ -e "$venv" ] && [ ! -f "$cfg" ] && [ -n "$(ls -A "$venv")" ]; then
    echo "setup: $venv exists and is not a venv (no pyvenv.cfg): move it away or set KFORGE_VENV" >&2
    exit 2
  fi
  if [ ! -f "$cfg" ]; then
    echo "setup: creating $venv (include-system-site-packages = $want)"
    "$base_python" -m venv "${flags[@]}" "$venv"
  elif ! "$py" -c '' 2>/dev/null; then
    echo "setup: $venv is broken (its python does not run): making it again"
    "$base_python" -m venv --clear "${flags[@]}" "$venv"
  elif ! grep -qx "include-system-site-packages = $want" "$cfg"; then
    # What the venv sees is this one line (PEP 405); the python step then installs what it lacks.
    echo "setup: $venv: include-system-site-packages set to $want (KFORGE_VENV_SYSTEM_SITE=$system_site)"
    sed -i '/^include-system-site-packages *=/d' "$cfg"
    echo "include-system-site-packages = $want" >> "$cfg"
  else
    echo "setup: venv $venv present (include-system-site-packages = $want)"
  fi
  if [ -n "${KFORGE_PYTHON_BIN:-}" ]; then
    echo "setup: note: KFORGE_PYTHON_BIN=$KFORGE_PYTHON_BIN is set: the scripts and tests run it, not $py"
  fi
  # pip itself, pinned: the pip a venv starts with is the base interpreter's (23.2.1 on Debian 12's
  # python 3.11), whose resolver spun for over an hour (100 % CPU, CI's 5400 s limit) on the trainer
  # step's packages beside torch, where 26.3 resolves them in about a minute.
  if [ "$("$py" -m pip --version 2>/dev/null | cut -d' ' -f2)" != "$pip_version" ]; then
    echo "setup: pip $pip_version into $venv"
    "$py" -m pip install -q "pip==$pip_version"
  fi
}

setup_python() {
  [ -x "$py" ] || { echo "setup: no venv at $venv (the venv step makes it)" >&2; exit 2; }
  if ! "$py" -c "import torch, sys; sys.exit(0 if torch.__version__.split('+')[0] == '$torch_version' else 1)" 2>/dev/null; then
    echo "setup: installing torch==$torch_version (with its libtorch)"
    "$py" -m pip install -q "torch==$torch_version"
  else
    echo "setup: torch $torch_version present"
  fi
  # Pinned: matplotlib (the report's plots, tools/python/kforge_client/report/), pyarrow (CUDA-Agent
  # parquet rows, tools/dataset/task_import/), einops (two KernelBench level 3 modules import it: the
  # importer runs the modules, issue 29).
  local matplotlib_version=3.11.2 ruff_version=0.17.6 einops_version=0.8.2  # ruff: tools/lint.sh
  local pydeps=(numpy safetensors pytest pyyaml pyzmq msgpack h5py "matplotlib==$matplotlib_version" lizard "pyarrow==$pyarrow_version"
      "ruff==$ruff_version" "einops==$einops_version")
  if ! "$py" -c "import numpy, safetensors, pytest, yaml, zmq, msgpack, h5py, matplotlib, lizard, pyarrow, einops, sys, importlib.metadata as m
sys.exit(0 if (matplotlib.__version__, pyarrow.__version__, m.version('ruff'), einops.__version__) == ('$matplotlib_version', '$pyarrow_version', '$ruff_version', '$einops_version') else 1)" 2>/dev/null; then
    echo "setup: installing Python packages: ${pydeps[*]}"
    "$py" -m pip install -q "${pydeps[@]}"
  else
    echo "setup: Python packages present"
  fi
}

# The trainer adapters' packages, pinned as tools/python/pyproject.toml's extras (gymnasium, skyrl,
# verl, verifiers, ray: verl needs it too; kforge_client.ray and its test python.rollout_ray run on it),
# in one resolve with torch held: skyrl-gym brings pandas, omegaconf and
# func_timeout; cachetools and fastapi are what verl's ToolAgentLoop imports beyond verl's own
# requirements. About 4 min into a fresh venv, nearly all of it downloads: nothing is built against
# them, so tools/test.sh runs this step beside the build and waits for it before the tests.
setup_trainers() {
  [ -x "$py" ] || { echo "setup: no venv at $venv (the venv step makes it)" >&2; exit 2; }
  local gymnasium_version=1.4.0 skyrl_gym_version=0.4.0 verl_version=0.9.1 verifiers_version=0.3.1 ray_version=2.60.0
  local trainers=("gymnasium==$gymnasium_version" "skyrl-gym==$skyrl_gym_version" "verl==$verl_version"
                  cachetools==8.0.2 fastapi==0.165.0 "verifiers==$verifiers_version" "ray[default]==$ray_version")
  if ! "$py" -c "import importlib.metadata as m, sys, cachetools, fastapi
want = ('$gymnasium_version', '$skyrl_gym_version', '$verl_version', '$verifiers_version', '$ray_version')
sys.exit(0 if tuple(m.version(p) for p in ('gymnasium', 'skyrl-gym', 'verl', 'verifiers', 'ray')) == want else 1)" 2>/dev/null; then
    echo "setup: installing the trainer adapters' packages: ${trainers[*]} (torch held at $torch_version)"
    local hold; hold=$(mktemp); echo "torch==$torch_version" > "$hold"
    "$py" -m pip install -q -c "$hold" "${trainers[@]}"; rm -f "$hold"
  else
    echo "setup: trainer adapters' packages present"
  fi
}

# CUDA toolkit: libtorch's CMake config needs one (headers, NVRTC, CUPTI, cudart, the driver stub).
setup_cuda() {
  if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
    echo "setup: CUDA toolkit present ($( (command -v nvcc || echo /usr/local/cuda/bin/nvcc) ))"
  else
    local cuda_version
    cuda_version=$("$py" -c "import torch; print(torch.version.cuda)")
    echo "setup: no CUDA toolkit found; installing CUDA $cuda_version pieces from NVIDIA's pip wheels"
    "$py" -m pip install -q "nvidia-cuda-nvcc==${cuda_version}.*" "nvidia-cuda-runtime==${cuda_version}.*" \
       "nvidia-cuda-nvrtc==${cuda_version}.*" "nvidia-cuda-cupti==${cuda_version}.*" "nvidia-cuda-cccl==${cuda_version}.*"
  fi
}

steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(debs venv python trainers cuda)
for s in "${steps[@]}"; do
  case $s in
    debs|venv|python|trainers|cuda) ;;
    *) echo "setup: unknown step '$s' (debs, venv, python, trainers, cuda)" >&2; exit 2 ;;
  esac
done
for s in "${steps[@]}"; do "setup_$s"; done
echo "setup: done"
