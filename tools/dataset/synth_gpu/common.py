"""What every part of the GPU stage shares: the rejection reasons, one-line input errors, small
formatters, and the bridge to `kforge`, which owns the dataset, the task specs, the tolerances and
the timing settings (`kforge tasks export-gpu`, `kforge tasks set-baselines`)."""
import json
import math
import os
import shutil
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))  # tools/dataset/synth_gpu/..

TOOL = "tools/synth_gpu.py 1"  # the records' `tool`: the same method and record layout as before the package
# (an identity, not a path: kept when the tool moved to tools/dataset/, so that old and new records compare)
START = time.monotonic()  # --time-budget-s counts from here (and across a re-exec, see Run.restart)

# The GPU stage's rejection reasons, in report order.
REASONS = [
    "build_failed",               # exec of the program, Model(*get_init_inputs()) or get_inputs() raised
    "eager_failed",               # the eager forward raised (out of memory included)
    "spec_mismatch",              # output count, shape or dtype differs from the spec (full dims only)
    "nondeterministic_gpu",       # two eager runs on the same inputs differ (bitwise)
    "nonfinite_gpu",              # NaN or inf in an output
    "invariant_to_inputs_gpu",    # two draws give outputs within tolerance of each other
    "below_tolerance_floor_gpu",  # an all-zeros answer passes on too many elements
    "near_constant_gpu",          # the best constant answer passes on too many elements
    "eager_runtime_window",       # eager median outside [window_ms_low, window_ms_high]
    "torch_compile_build",        # torch.compile failed, crashed or timed out
    "compile_mismatch",           # torch.compile's output fails the task tolerance against eager
    "artifact_failed",            # an imported task's TorchScript artifact does not load or raises at its own size
    "artifact_mismatch",          # the artifact differs from the module run eagerly at its own size (artifact_check.py)
]
# The phases of a task's serial seconds in the main process (a record's phase_s; run.Phases).
PHASES = ("mem_wait", "exec_build", "checks", "probe_timing", "compile_warm", "lock_wait", "timing", "release")
RUNTIME_BINS = ["<1", "1-2", "2-5", "5-10", "10-20", "20-50", "50-100", ">100"]  # as data_synth's runtime_bins()
SPEEDUP_BINS = ["<0.5", "0.5-0.8", "0.8-0.95", "0.95-1.05", "1.05-1.25", "1.25-1.5", "1.5-2", "2-3", ">=3"]


class InputError(Exception):
    """A problem with what the user gave: reported as one line, exit code 1."""


def runtime_bin(ms):
    for edge, name in zip([1, 2, 5, 10, 20, 50, 100], RUNTIME_BINS):
        if ms < edge:
            return name
    return RUNTIME_BINS[-1]


def speedup_bin(x):
    for edge, name in zip([0.5, 0.8, 0.95, 1.05, 1.25, 1.5, 2, 3], SPEEDUP_BINS):
        if x < edge:
            return name
    return SPEEDUP_BINS[-1]


def duration(s):
    if s is None or not math.isfinite(s) or s < 0:
        return "?"
    s = int(s)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s // 60 % 60:02d}m"


def error_line(e):
    lines = [ln.strip() for ln in str(e).strip().splitlines() if ln.strip()]
    text = lines[-1] if lines else ""
    return (type(e).__name__ + (": " + text if text else ""))[:300]



def quantile_sorted(s, q):
    """reward/timing_stats.cpp's quantile_sorted, operation for operation: q in [0, 1] of sorted
    samples, interpolated linearly between the two nearest ranks. Held equal to the C++ by
    tests/golden/timing_stats.json (tests/tools/test_golden_timing_stats.py)."""
    pos = q * (len(s) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def mean_std(xs):
    """reward/timing_stats.cpp's mean_std: the mean summed in the samples' order, and the sample
    standard deviation (n - 1; 0 for one sample)."""
    mean = 0.0
    for x in xs:
        mean += x
    mean /= len(xs)
    ss = 0.0
    for x in xs:
        ss += (x - mean) * (x - mean)
    return mean, (math.sqrt(ss / (len(xs) - 1)) if len(xs) > 1 else 0.0)


def percentile(xs, p):
    """The p-quantile of xs as the C++ computes it (quantile_sorted); None for no values."""
    s = sorted(xs)
    return quantile_sorted(s, p) if s else None


def speedup_stats(speedups):
    """torch.compile's speedups over eager summarised: median, p10, p90, geomean and the shares where
    compile is clearly faster (> 1.05) or slower (< 0.95); {} for none."""
    if not speedups:
        return {}
    return {"median": percentile(speedups, 0.5), "p10": percentile(speedups, 0.1), "p90": percentile(speedups, 0.9),
            "geomean": math.exp(sum(math.log(s) for s in speedups) / len(speedups)),
            "compile_faster_share": sum(1 for s in speedups if s > 1.05) / len(speedups),
            "compile_slower_share": sum(1 for s in speedups if s < 0.95) / len(speedups)}



# ----------------------------------------------------------------------------------------------
# kforge: the dataset, the tasks as it resolves them, the settings of configs/synth.yaml.

def kforge_bin():
    """The kforge binary: $KFORGE_BIN, else the build folder's, else `kforge` on PATH."""
    env = os.environ.get("KFORGE_BIN")
    if env:
        return env
    for d in (os.environ.get("KFORGE_BUILD_DIR"), os.path.join(ROOT, "build")):
        if d and os.access(os.path.join(d, "tools", "kforge"), os.X_OK):
            return os.path.join(d, "tools", "kforge")
    found = shutil.which("kforge")
    if not found:
        raise InputError("no kforge binary: set KFORGE_BIN, or build it (tools/build.sh)")
    return found


def run_kforge(*args):
    """stdout of `kforge ARGS`; its one-line error (`kforge: <kind>: <what>`) as an InputError."""
    try:
        r = subprocess.run([kforge_bin(), *map(str, args)], capture_output=True, text=True)
    except OSError as e:
        raise InputError(f"cannot run kforge ({error_line(e)})")
    if r.returncode != 0:
        lines = [ln for ln in r.stderr.strip().splitlines() if ln.strip()]
        msg = lines[-1] if lines else f"kforge {args[0]} failed (exit {r.returncode})"
        for prefix in ("kforge: ",):
            msg = msg[len(prefix):] if msg.startswith(prefix) else msg
        kind, _, rest = msg.partition(": ")
        raise InputError(rest if rest and " " not in kind else msg)
    return r.stdout


def export_tasks(dataset, shard="0/1", ids=None, config=None):
    """(settings, tasks) from `kforge tasks export-gpu`: the settings line (window_ms,
    min_informative_fraction, timing: configs/synth.yaml's baseline_timing) and one dict per task
    (id, row, shard, graph_hash, est_runtime_ms, dtype, seed, dims, check_dims, outputs,
    tolerance {atol, rtol} as kforge resolves it, program_py), in the order to do them."""
    args = ["tasks", "export-gpu", dataset, "--shard", shard]
    if ids:
        args += ["--ids", ids]
    if config:
        args += ["--config", config]
    lines = run_kforge(*args).splitlines()
    settings = json.loads(lines[0])
    return settings, [json.loads(ln) for ln in lines[1:]]


def read_exported(path, shard="0/1", ids=None):
    """(settings, tasks) as export_tasks gives them, read from a file that `kforge tasks export-gpu DATASET
    --shard all/1 --out FILE` wrote beforehand (a GPU host without a kforge build): every task (--shard
    0/1), or those listed in `ids` in the list's order (repeats dropped), tagged with the k of k/N."""
    try:
        with open(path) as f:
            lines = [ln for ln in f.read().splitlines() if ln.strip()]
        settings, tasks = json.loads(lines[0]), [json.loads(ln) for ln in lines[1:]]
    except (OSError, ValueError, IndexError) as e:
        raise InputError(f"--exported {path}: {error_line(e)}")
    if settings.get("kind") != "settings" or settings.get("shards") != 1:
        raise InputError(f"--exported {path}: not the output of kforge tasks export-gpu --shard all/1")
    try:
        k, n = (int(x) for x in shard.split("/"))
    except ValueError:
        raise InputError(f"--shard is k/N, not '{shard}'")
    if ids:
        by_id = {t["id"]: t for t in tasks}
        with open(ids) as f:
            wanted = list(dict.fromkeys(ln.strip() for ln in f if ln.strip()))
        unknown = [i for i in wanted if i not in by_id]
        if unknown:
            raise InputError(f"{ids}: {len(unknown)} id(s) not in {path}, e.g. {unknown[0]}")
        tasks = [dict(by_id[i], shard=k) for i in wanted]
    elif n != 1:
        raise InputError("--exported takes --ids FILE or --shard 0/1")
    return dict(settings, shards=n), tasks
