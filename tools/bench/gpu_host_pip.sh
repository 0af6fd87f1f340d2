# Sourced by gpu_wheels.sh and gpu_verl_bundle.sh: packages fetched here for the GPU hosts' Python
# (cp312, manylinux x86_64; the device tool's KINDS.md), into a folder of the checkout that git
# ignores and a device call carries. Defines gpu_pip ARGS... (pip with those platform flags, through
# the project's Python) and ignored_folder NAME (adds /NAME/ to .git/info/exclude and makes it).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
. tools/python_env.sh
kforge_python "$root"
gpu_platforms=()
for p in manylinux_2_17 manylinux2014 manylinux_2_24 manylinux_2_27 manylinux_2_28 manylinux_2_31 manylinux_2_34 manylinux_2_35; do
  gpu_platforms+=(--platform "${p}_x86_64")
done
gpu_pip() {  # gpu_pip download|install ARGS...: binary wheels only, no dependencies resolved
  local verb=$1; shift
  "$KFORGE_PYTHON_BIN" -m pip "$verb" -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    "${gpu_platforms[@]}" "$@"
}
ignored_folder() {
  grep -qxF "/$1/" .git/info/exclude 2>/dev/null || echo "/$1/" >> .git/info/exclude
  mkdir -p "$1"
}
