# Sourced by the KernelBench scripts (kernelbench_gpu.sh, kernelbench_report.sh) after tools/python_env.sh,
# with $root the repository root: the kforge they run and the libraries it needs, here or on a GPU host.
#   KFORGE_BIN  as set, else this tree's build/tools/kforge, else build-gpu/tools/kforge (which
#               `bash .gpu/run.sh build` makes on a GPU host); exported, with PYTHONUNBUFFERED=1
#   LD_LIBRARY_PATH  gets KFORGE_GPU_DEPS (/opt/project-deps): the libraries .gpu/run.sh unpacked
#               (libzmq, ...), as it runs kforge, where that folder exists
if [ -z "${KFORGE_BIN:-}" ]; then
  KFORGE_BIN=$root/build/tools/kforge
  [ -x "$KFORGE_BIN" ] || [ ! -x "$root/build-gpu/tools/kforge" ] || KFORGE_BIN=$root/build-gpu/tools/kforge
fi
export KFORGE_BIN PYTHONUNBUFFERED=1
kforge_deps=${KFORGE_GPU_DEPS:-/opt/project-deps}
if [ -d "$kforge_deps/usr/lib/x86_64-linux-gnu" ]; then
  export LD_LIBRARY_PATH=$kforge_deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
