# The one Python interpreter every kforge script and test runs. Sourced, not executed:
#
#   . "$root/tools/python_env.sh" && kforge_python "$root" || exit 2
#   "$KFORGE_PYTHON_BIN" tools/dataset/synth_gpu.py ...
#
# kforge_python ROOT sets and exports KFORGE_PYTHON_BIN (an absolute path), the first of:
#   1. KFORGE_PYTHON_BIN as given (a path, or a name looked up on PATH once, here);
#   2. the project's venv, $KFORGE_VENV/bin/python (default ROOT/.venv), made by tools/setup.sh;
#   3. on a GPU host where .gpu/run.sh has run (ROOT/.gpu/run.sh present and the carried packages
#      unpacked, /opt/project-deps/.done) that has no venv: the host's python3, the interpreter .gpu/run.sh configures, builds and tests with (its
#      torch preinstalled; the carried wheels, unpacked into /tmp/site, put on PYTHONPATH as
#      .gpu/run.sh does);
#   4. none: an error naming the fix, and status 1. Never a bare python3 from PATH elsewhere: a
#      system python3 lacks the packages the scripts import (h5py, torch, ...).
# CMake picks its Python3_EXECUTABLE by the same rules (CMakeLists.txt), and the pytest suites it
# runs get KFORGE_PYTHON_BIN set to it.

kforge_python() {
  local root=${1:?kforge_python ROOT} py=""
  if [ -n "${KFORGE_PYTHON_BIN:-}" ]; then
    py=$(command -v -- "$KFORGE_PYTHON_BIN" 2>/dev/null) || py=""
    if [ -z "$py" ] || [ ! -x "$py" ]; then
      echo "kforge: KFORGE_PYTHON_BIN=$KFORGE_PYTHON_BIN is not an interpreter that can run" >&2
      return 1
    fi
  elif [ -x "${KFORGE_VENV:-$root/.venv}/bin/python" ]; then
    py=${KFORGE_VENV:-$root/.venv}/bin/python
  elif [ -f "$root/.gpu/run.sh" ] && [ -f "${KFORGE_GPU_DEPS:-/opt/project-deps}/.done" ] && py=$(command -v python3 2>/dev/null) &&
       [ -n "$py" ]; then
    if [ -d /tmp/site ]; then
      case ":${PYTHONPATH:-}:" in *:/tmp/site:*) ;; *) export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH} ;; esac
    fi
  else
    echo "kforge: no Python for the scripts: no venv at ${KFORGE_VENV:-$root/.venv} (run tools/setup.sh), or set" \
         "KFORGE_PYTHON_BIN to an interpreter that has the project's packages" >&2
    return 1
  fi
  case $py in /*) ;; *) py=$(cd "$(dirname "$py")" && pwd)/$(basename "$py") ;; esac
  export KFORGE_PYTHON_BIN=$py
}
