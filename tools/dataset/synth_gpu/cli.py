"""The command line of the GPU stage: `python tools/dataset/synth_gpu.py DIR/dataset.h5 --shard k/N ...`,
`--merge`, `--compare` (tools/dataset/SYNTH_GPU.md)."""
import argparse
import os
import sys

from . import __doc__ as PACKAGE_DOC
from . import artifact_check
from .checks import FUSED
from .common import InputError, ROOT, export_tasks, read_exported
from .merge import cmd_compare, cmd_merge
from .records import read_records
from .run import Run
from .torch_env import apply_flags


# --warmup-calls and the rest: overrides of configs/synth.yaml's baseline_timing (tests, experiments;
# the records' method text says what was used).
OVERRIDES = (("warmup_calls", "warmup_count"), ("warmup_ms", "warmup_ms"), ("min_n", "min_reps"), ("max_n", "max_reps"),
             ("rse", "target_rse"), ("max_task_s", "budget_ms"))


def timing_settings(a, timing):
    t = dict(timing)
    for flag, key in OVERRIDES:
        v = getattr(a, flag)
        if v is not None:
            t[key] = v * 1e3 if flag == "max_task_s" else v
    if not (t["min_reps"] >= 1 and t["max_reps"] >= t["min_reps"] and 0 < t["target_rse"] < 1 and t["budget_ms"] > 0
            and t["warmup_count"] >= 0 and t["warmup_ms"] >= 0):
        raise InputError("--min-n >= 1, --max-n >= --min-n, 0 < --rse < 1, --max-task-s > 0, --warmup-* >= 0")
    return t


def cmd_run(a):
    a.out = a.out or os.path.join(os.path.dirname(os.path.abspath(a.dataset)), "gpu")
    # The tasks, their tolerances and the settings, as kforge resolves them (its errors: one line).
    settings, exported = read_exported(a.exported, a.shard, a.ids) if a.exported else \
        export_tasks(a.dataset, a.shard, a.ids, a.config)
    a.shard_n = settings["shards"]
    a.cfg = {"window_ms": settings["window_ms"], "min_informative_fraction": settings["min_informative_fraction"]}
    a.timing = timing_settings(a, settings["timing"])
    n_rows = settings["rows"]
    rows = [t["row"] for t in exported]
    # Done: a record of this id for this task (same graph hash: a record of another dataset whose
    # ids happen to match does not count).
    done = {(r["id"], r.get("graph_hash")) for r in read_records(a.out)} if os.path.isdir(a.out) else set()
    todo = [t for t in exported if (t["id"], t["graph_hash"]) not in done]
    resumed = len(exported) - len(todo)
    if a.limit is not None:
        todo = todo[:a.limit]

    # One process-wide setting for the timing process and the compile workers: no background pool of
    # Inductor compile processes competing with the timed calls (set before torch is imported).
    os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
    import torch  # after the cheap checks: a bad input fails fast
    if a.device.startswith("cuda") and not torch.cuda.is_available():
        raise InputError(f"--device {a.device}: no CUDA device is available (use --device cpu for the CI mode)")
    if a.device.startswith("cuda") and torch.device(a.device).index is not None:
        torch.cuda.set_device(torch.device(a.device))
    apply_flags(torch)
    FUSED.enabled = a.fused_checks
    dims_mode = a.dims if a.dims != "auto" else ("full" if a.device.startswith("cuda") else "check")
    # The importer's trace tiers (imported.jsonl beside the dataset): which artifacts the probe checks
    # against the module at its own size (artifact_check.py).
    imported_jsonl = a.imported or os.path.join(os.path.dirname(os.path.abspath(a.dataset)), "imported.jsonl")
    if a.imported and not os.path.exists(a.imported):
        raise InputError(f"--imported {a.imported}: no such file")
    tiers = artifact_check.read_tiers(imported_jsonl)
    tasks = []
    for t in todo:
        # An imported module (a TorchScript reference) has its own shapes and no check_dims: it runs as
        # given in both modes, in its own module mode, and no runtime window rejects it.
        imported = t.get("reference") == "torchscript"
        if dims_mode == "check" and not t["check_dims"] and not imported:
            raise InputError(f"{a.dataset}: task {t['id']} has no check_dims (needed by --dims check)")
        task = dict(t, est_ms=t["est_runtime_ms"], program=t["program_py"], imported=imported,
                    module_mode=t.get("module_mode", "eval"), trace_tier=tiers.get(t["id"]),
                    dims=t["check_dims"] if dims_mode == "check" and not imported else None)
        task["artifact_check"] = artifact_check.wanted(task, a.artifact_check, tiers)
        tasks.append(task)
    os.makedirs(a.out, exist_ok=True)
    n_art = sum(1 for t in tasks if t["artifact_check"])
    if any(t["imported"] for t in tasks):
        print(f"synth_gpu: artifact check ({a.artifact_check}) on {n_art} of {sum(1 for t in tasks if t['imported'])} "
              f"imported task(s); trace tiers from {imported_jsonl if tiers else 'nowhere (no imported.jsonl)'}",
              file=sys.stderr, flush=True)
    what = f"{a.ids} lists {len(rows)}" if a.ids else \
        f"shard {a.shard} has {len(rows)} (rows {rows[0] if rows else 0}-{rows[-1] if rows else -1})"
    print(f"synth_gpu: {a.dataset}: {n_rows} tasks; {what}, {resumed} already written, {len(tasks)} to do in this run; device {a.device} "
          f"at {dims_mode} dims; window {a.cfg['window_ms'][0]:g}-{a.cfg['window_ms'][1]:g} ms; {a.workers} compile "
          f"worker(s), {'overlapping the timing' if a.overlap and a.workers > 0 else 'no overlap'}; out {a.out}",
          file=sys.stderr, flush=True)
    if a.device == "cpu" and a.threads:
        torch.set_num_threads(a.threads)
    return Run(a, torch).go(tasks, resumed)


def main(argv=None):
    ap = argparse.ArgumentParser(description=PACKAGE_DOC.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dataset", help="DIR/dataset.h5 written by kforge synth")
    ap.add_argument("--merge", action="store_true", help="write the part files back into the dataset, with a summary")
    ap.add_argument("--compare", default=None, metavar="DIR",
                    help="compare the records in --out (default DIR/gpu) with those in this folder (same rows of "
                         "another run): statuses, time ratios, noise, serial seconds by phase")
    ap.add_argument("--shard", default="0/1", help="k/N: this run takes the k-th of N contiguous blocks of rows")
    ap.add_argument("--ids", default=None, metavar="FILE",
                    help="do these task ids (one per line, in order) instead of the shard's rows; their records go "
                         "to part-k.jsonl of --shard k/N; ids already measured are skipped")
    ap.add_argument("--device", default="cuda", help="cuda, cuda:I, or cpu (the CI mode: check dims, no cache flush)")
    ap.add_argument("--out", default=None, help="folder of the part-k.jsonl files (default: DIR/gpu)")
    ap.add_argument("--config", default=os.path.join(ROOT, "configs", "synth.yaml"),
                    help="synthesis config, read by kforge: window_ms_low/high, cpu_check.min_informative_fraction, "
                         "baseline_timing")
    ap.add_argument("--limit", type=int, default=None, help="at most this many tasks in this run")
    ap.add_argument("--time-budget-s", type=float, default=None,
                    help="start no task that would end after this many seconds (from the first start)")
    ap.add_argument("--workers", type=int, default=None,
                    help="compile worker processes (0: compile in this process; default: CPUs - reserved cores on cuda, 1 on cpu)")
    ap.add_argument("--batch", type=int, default=None, help="tasks per probe/compile/time round (default 4 x workers)")
    ap.add_argument("--overlap", action=argparse.BooleanOptionalAction, default=True,
                    help="the workers compile the next round while this process times the current one (default); "
                         "--no-overlap: probe, compile (this process idle), time, one round after the other")
    ap.add_argument("--reserved-cores", type=int, default=None,
                    help="CPUs for this (the timing) process alone, the workers on the others (default 2 on cuda, 0 on "
                         "cpu; 0: no pinning)")
    ap.add_argument("--dims", choices=["auto", "full", "check"], default="auto",
                    help="full dims (auto on cuda) or the spec's check_dims (auto on cpu)")
    # The timing settings come from the config (baseline_timing); these override them.
    ap.add_argument("--warmup-calls", type=int, default=None, help="override baseline_timing.warmup_count")
    ap.add_argument("--warmup-ms", type=float, default=None, help="override baseline_timing.warmup_ms")
    ap.add_argument("--min-n", type=int, default=None, help="override baseline_timing.min_reps")
    ap.add_argument("--max-n", type=int, default=None, help="override baseline_timing.max_reps")
    ap.add_argument("--rse", type=float, default=None, help="override baseline_timing.target_rse (stop below it)")
    ap.add_argument("--max-task-s", type=float, default=None, help="override baseline_timing.budget_ms (in seconds)")
    ap.add_argument("--probe-n", type=int, default=3,
                    help="eager calls of the probe, which rejects tasks far outside the window before they are "
                         "compiled; 0: no probe, one GPU turn per task instead of two (the final timing decides "
                         "the window, and stops a task after two warm-up calls above the window's top x "
                         "--probe-margin)")
    ap.add_argument("--probe-margin", type=float, default=1.25,
                    help="the probe rejects only beyond the window by this factor; the final median decides")
    ap.add_argument("--compile-timeout-s", type=float, default=300.0)
    ap.add_argument("--compile-mem-factor", type=float, default=1.5,
                    help="memory admission: a compile job (and, with overlap, this process's task) is counted as "
                         "this x the probe's peak + 1 GiB, all within 80 %% of the device")
    ap.add_argument("--fused-checks", action=argparse.BooleanOptionalAction, default=True,
                    help="on a GPU, count the checks' tolerance failures in one fused Triton kernel (self-checked "
                         "against the torch operations before first use; default); --no-fused-checks: the torch "
                         "operations")
    ap.add_argument("--artifact-check", choices=artifact_check.MODES, default="auto",
                    help="imported tasks: run the TorchScript artifact against the module eagerly at its own size "
                         "(artifact_mismatch / artifact_failed); auto: every artifact not traced and checked at its "
                         "own size (trace tiers A, B, A1, M, or unknown), all: every imported task, off: none")
    ap.add_argument("--exported", default=None, metavar="FILE",
                    help="the tasks and settings from this file, written beforehand by `kforge tasks export-gpu DATASET "
                         "--shard all/1 --out FILE` (a host without a kforge build; --config then has no effect)")
    ap.add_argument("--specs", default=None, metavar="DIR",
                    help="the artifact check's task specs from this folder of ID.yaml, written beforehand by `kforge "
                         "tasks export DATASET --status all --format kernelbench --specs --out DIR`")
    ap.add_argument("--imported", default=None, metavar="FILE",
                    help="the importer's imported.jsonl, for the trace tiers (default: beside the dataset)")
    ap.add_argument("--max-restarts", type=int, default=20)
    ap.add_argument("--threads", type=int, default=0, help="CPU mode: torch threads (0: torch's default)")
    ap.add_argument("--progress-s", type=float, default=5.0)
    ap.add_argument("--allow-cpu", action="store_true", help="merge: accept records measured with --device cpu")
    ap.add_argument("--no-plots", action="store_true")
    ap.add_argument("--results", default=None,
                    help="merge: also write the run's figures as a tools/bench/results/ JSON file here")
    a = ap.parse_args(argv)
    try:
        if a.merge:
            return cmd_merge(a)
        if a.compare:
            return cmd_compare(a)
        if a.limit is not None and a.limit < 0:
            raise InputError("--limit must be >= 0")
        if a.probe_n < 0:
            raise InputError("--probe-n must be >= 0 (0: no probe)")
        if a.reserved_cores is None:
            a.reserved_cores = 2 if a.device.startswith("cuda") else 0
        if a.reserved_cores < 0:
            raise InputError("--reserved-cores must be >= 0")
        if a.workers is None:
            try:
                n_cpus = len(os.sched_getaffinity(0))
            except (AttributeError, OSError):
                n_cpus = os.cpu_count() or 2
            a.workers = max(1, n_cpus - a.reserved_cores) if a.device.startswith("cuda") else 1
        if a.workers < 0:
            raise InputError("--workers must be >= 0")
        a.batch = a.batch or max(4, 4 * a.workers)
        return cmd_run(a)
    except InputError as e:
        print(f"synth_gpu: error: {e}", file=sys.stderr)
        return 1


