#!/usr/bin/env bash
# The tree's hygiene, checked (tools/test.sh runs it before ctest; any finding fails it):
#   clang-format  every C++ file of kforge's own is laid out as .clang-format says (the candidate
#                 kernels under anticheat/corpus, datasets/, tools/bench/compile_sources and
#                 tests/env/extension/candidates are data)
#   remove_all    no C++ file calls std::filesystem::remove_all: in a process with libtorch it can call a
#                 null pointer (configs/remove_tree.h says why; remove_tree is the project's way)
#   ruff          the Python passes `ruff check` (ruff.toml)
#   clang-tidy    every torch-free translation unit of kforge (not the tests) passes .clang-tidy's checks
#                 (build/compile_commands.json; the libtorch ones take minutes each to parse and
#                 share their headers with the others, which are checked with them)
# `tools/lint.sh --fix` applies clang-format and ruff's safe fixes instead of checking.
# KFORGE_TIDY=0 skips clang-tidy (it needs a configured build: tools/build.sh).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
. "$root/tools/python_env.sh"
kforge_python "$root" || exit 2
fix=0; [ "${1:-}" = --fix ] && fix=1
build=${KFORGE_BUILD_DIR:-$root/build}
mapfile -t cxx < <(git ls-files '*.cpp' '*.h' '*.cu' | grep -v -E '^(anticheat/corpus|datasets|tools/bench/compile_sources|tests/fuzz/seeds|tests/env/extension/candidates)/')
rc=0
if [ $fix = 1 ]; then
  clang-format -i "${cxx[@]}"
  "$KFORGE_PYTHON_BIN" -m ruff check --fix .
  exit 0
fi
echo "lint: clang-format on ${#cxx[@]} files"
clang-format --dry-run --Werror "${cxx[@]}" || { echo "lint: clang-format: run tools/lint.sh --fix" >&2; rc=1; }
echo "lint: no std::filesystem::remove_all (configs/remove_tree.h)"
if grep -n -E '(fs|filesystem)::remove_all *\(' "${cxx[@]}" >&2; then
  echo "lint: use remove_tree (configs/remove_tree.h) instead of the above" >&2; rc=1
fi
echo "lint: ruff"
"$KFORGE_PYTHON_BIN" -m ruff check --quiet . || rc=1
if [ "${KFORGE_TIDY:-1}" != 0 ]; then
  [ -f "$build/compile_commands.json" ] || { echo "lint: no $build/compile_commands.json (tools/build.sh first)" >&2; exit 1; }
  mapfile -t units < <("$KFORGE_PYTHON_BIN" - "$build/compile_commands.json" "$root" <<'PY'
import json, sys
root = sys.argv[2] + "/"
seen = set()
for e in json.load(open(sys.argv[1])):
    f = e["file"]
    if not f.startswith(root) or f.startswith(root + "tests/") or "/torch/include" in e.get("command", " ".join(e.get("arguments", []))) or f in seen:
        continue
    seen.add(f)
    print(f)
PY
  )
  echo "lint: clang-tidy on ${#units[@]} torch-free translation units"
  printf '%s\n' "${units[@]}" | xargs -P "${KFORGE_JOBS:-$(nproc)}" -n 4 clang-tidy -p "$build" --quiet 2>/dev/null >"$build/clang-tidy.log" || {
    grep -E "warning:|error:" "$build/clang-tidy.log" | sort -u >&2; echo "lint: clang-tidy found the above" >&2; rc=1; }
fi
exit $rc
