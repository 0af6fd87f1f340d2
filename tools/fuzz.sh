#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/CMakeLists.txt: clang, ASan and UBSan, the parsers'
# sources only, ccache when present) into $KFORGE_FUZZ_BUILD_DIR (default <repo>/build-fuzz), then
# runs each target: once over its committed seeds in full (tests/fuzz/seeds/<target>/, the crash
# inputs of issue 26 among them), then fuzzing from them for $KFORGE_FUZZ_SECONDS (default 12) with
# inputs up to 4096 bytes. Targets run $KFORGE_FUZZ_JOBS at a time (default: the cores). Prints one
# line per target (executions, seconds, crashes) and exits 1 on any crash, leaving the input under
# the build folder's crashes/. KFORGE_FUZZ_JSON=path also writes the figures as a results record
# (tools/bench/results_doc.py). tools/test.sh runs this; rollout/README.md says more.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${KFORGE_FUZZ_BUILD_DIR:-$root/build-fuzz}
seconds=${KFORGE_FUZZ_SECONDS:-12}
jobs=${KFORGE_FUZZ_JOBS:-$(nproc)}
targets=(dim_expr launch_plan task_spec tool_call decode)
cxx=${KFORGE_FUZZ_CXX:-clang++}
if ! command -v "$cxx" >/dev/null 2>&1; then
  echo "fuzz: $cxx not found; the fuzz targets need clang (libFuzzer)" >&2
  exit 1
fi
start=$(date +%s)
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root/tests/fuzz" -B "$build" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" >/dev/null
fi
cmake --build "$build" -j "$(nproc)" >"$build/build.log" 2>&1 || { tail -40 "$build/build.log" >&2; exit 1; }
echo "fuzz: built ${#targets[@]} targets in $(($(date +%s) - start)) s"

run_target() {
  local t=$1 out="$build/runs/$1"
  rm -rf "$out" && mkdir -p "$out/corpus" "$build/crashes/$t"
  local bin="$build/kforge_fuzz_$t" seeds="$root/tests/fuzz/seeds/$t"
  local flags=(-artifact_prefix="$build/crashes/$t/" -print_final_stats=1 -rss_limit_mb=2048 -timeout=10)
  # The seeds whole (no length cap), then fuzzing (new inputs go to the run's own corpus).
  if ! "$bin" "${flags[@]}" -runs=0 "$seeds" >"$out/seeds.log" 2>&1; then
    echo "$t seeds_crash" >"$out/result"
    return
  fi
  local rc=0
  "$bin" "${flags[@]}" -max_len=4096 -max_total_time="$seconds" "$out/corpus" "$seeds" >"$out/fuzz.log" 2>&1 || rc=$?
  local execs secs
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/fuzz.log" | tail -1)
  secs=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$out/fuzz.log" | tail -1)
  echo "$t ${execs:-0} ${secs:-$seconds} $([ $rc -eq 0 ] && echo 0 || echo 1)" >"$out/result"
}

pids=()
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  run_target "$t" &
  pids+=($!)
done
wait "${pids[@]}" || true

failed=0
figures=""
for t in "${targets[@]}"; do
  read -r name execs secs crashes <"$build/runs/$t/result" || { name=$t execs=0 secs=0 crashes=1; }
  if [ "$execs" = "seeds_crash" ]; then
    echo "fuzz $t: CRASH on a committed seed (tests/fuzz/seeds/$t); log: $build/runs/$t/seeds.log" >&2
    tail -30 "$build/runs/$t/seeds.log" >&2
    failed=1
    continue
  fi
  echo "fuzz $t: $execs executions in $secs s, $crashes crashes"
  if [ "$crashes" != 0 ]; then
    echo "fuzz $t: the crashing input is under $build/crashes/$t/; log: $build/runs/$t/fuzz.log" >&2
    tail -40 "$build/runs/$t/fuzz.log" >&2
    failed=1
  fi
  figures+="$t $execs $secs $crashes;"
done
echo "fuzz: done in $(($(date +%s) - start)) s"
if [ -n "${KFORGE_FUZZ_JSON:-}" ]; then
  . "$root/tools/python_env.sh"
  kforge_python "$root" || exit 1
  "$KFORGE_PYTHON_BIN" - "$KFORGE_FUZZ_JSON" "$figures" "$seconds" "$jobs" <<'PY'
import datetime, os, platform, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(sys.argv[0] if sys.argv[0] != "-" else ".")), "tools", "bench"))
sys.path.insert(0, os.path.join(os.getcwd(), "tools", "bench"))
from results_doc import commit, write
path, rows, seconds, jobs = sys.argv[1:]
figures = {}
for row in filter(None, rows.split(";")):
    t, execs, secs, crashes = row.split()
    figures.update({f"{t}_executions": int(execs), f"{t}_seconds": int(secs), f"{t}_crashes": int(crashes)})
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.machine())
doc = {"gpu": "none (CPU only)", "driver": "", "cuda": "", "torch": "", "cpu": f"{os.cpu_count()} x {cpu}",
       "date": datetime.date.today().isoformat(), "commit": commit(),
       "command": f"KFORGE_FUZZ_SECONDS={seconds} KFORGE_FUZZ_JOBS={jobs} tools/fuzz.sh", "figures": figures}
sys.exit(0 if write(path, doc, "fuzz") else 1)
PY
fi
exit $failed
