"""The command line and the run over every module (README.md here)."""
import argparse
import gc
import glob
import json
import os
import sys
import time

from .common import REASONS, Skip, one_line
from .sources import InputError, collect

IN_FLIGHT = "in_flight.json"


# The GPU the tasks are judged on: an H200 offers about 139 GiB to CUDA (143 GB nominal). A task's
# arguments may take a quarter of it: the harness holds them more than once (the candidate's, the
# reference's copies, the next trial's draws), beside the outputs and the module's own intermediates.
GPU_MEMORY_GIB = 139.0
ARGUMENT_SHARE = 0.25


def default_memory_mb(jobs):
    """16 GiB, or three quarters of MemAvailable shared by the `jobs` workers when less: a worker past
    it gets a MemoryError (a skip) rather than the kernel's OOM killer (a SIGKILL that may take other
    processes along)."""
    try:
        with open("/proc/meminfo") as f:
            avail = next(int(line.split()[1]) for line in f if line.startswith("MemAvailable:"))
        return max(4096, min(16384, avail * 3 // 4 // 1024 // jobs))
    except (OSError, StopIteration, ValueError):
        return 16384


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m task_import", description=__doc__)
    p.add_argument("--format", required=True, choices=("kernelbench", "cuda-agent"))
    p.add_argument("--out", required=True, help="output folder: tasks/, skipped.jsonl, import_summary.json")
    p.add_argument("--tolerance", default="kforge", choices=("kforge", "cuda-agent"))
    p.add_argument("--split", default="train", choices=("train", "heldout"))
    p.add_argument("--seed", type=int, default=0, help="base of the task seeds and of the importer's own draws")
    p.add_argument("--limit", type=int, default=None, help="import at most this many modules (the first ones)")
    p.add_argument("--level", type=int, choices=(1, 2, 3), default=None,
                   help="kernelbench: the level of files outside a level1/level2/level3 folder")
    p.add_argument("--gpu-memory-gib", type=float, default=GPU_MEMORY_GIB,
                   help="memory of the GPU the tasks are judged on (default: an H200's); --max-bytes is a quarter of it")
    p.add_argument("--max-bytes", type=int, default=None,
                   help="skip (too_large) above this many argument bytes (default: --gpu-memory-gib / 4)")
    p.add_argument("--timeout-s", type=float, default=300.0, help="time limit per module, for loading and for running")
    p.add_argument("--memory-mb", type=int, default=None,
                   help="address space of a module's worker in MiB (RLIMIT_AS; torch alone takes about 3 GiB; "
                   "default 16384, or three quarters of the memory available at the start when that is less)")
    p.add_argument("--max-processes", type=int, default=256,
                   help="processes a module's worker may have (RLIMIT_NPROC of its user; a fork bomb stops there)")
    p.add_argument("--threads", type=int, default=1,
                   help="torch threads of a module's worker (default 1: the checks run at small sizes, where a "
                   "thread pool on a shared machine costs more than it gives)")
    p.add_argument("--jobs", type=int, default=None,
                   help="modules examined at once, each in its worker (default: the CPUs this process may use)")
    p.add_argument("--in-process", action="store_true",
                   help="examine modules in this process, not each in a forked worker (for debugging)")
    p.add_argument("paths", nargs="+", metavar="PATH")
    a = p.parse_args(argv)
    if a.limit is not None and a.limit < 0:
        p.error("--limit must be >= 0")
    if a.gpu_memory_gib <= 0:
        p.error("--gpu-memory-gib must be > 0")
    if a.max_bytes is None:
        a.max_bytes = int(a.gpu_memory_gib * (1 << 30) * ARGUMENT_SHARE)
    if a.jobs is None:
        a.jobs = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if a.jobs <= 0:
        p.error("--jobs must be > 0")
    if a.memory_mb is None:
        a.memory_mb = default_memory_mb(a.jobs)
    if a.max_bytes <= 0 or a.timeout_s <= 0 or a.memory_mb <= 0 or a.max_processes <= 0 or a.threads <= 0:
        p.error("--max-bytes, --timeout-s, --memory-mb, --max-processes and --threads must be > 0")
    if a.level is not None and a.format != "kernelbench":
        p.error("--level is for --format kernelbench")
    return a


def examine(item, k, a, opts):
    """The Analysis of one module, or raises Skip."""
    import torch

    from .classify import analyze

    name = f"kforge_import_{k}"
    if not a.in_process:
        from .isolation import examine_in_child
        analysis = examine_in_child(item, name, opts, a.threads)
    else:
        default_dtype = torch.get_default_dtype()
        try:
            analysis = analyze(item, name, opts)
        finally:
            from .loading import unload_module
            unload_module(name)
            torch.set_default_dtype(default_dtype)
            torch.set_grad_enabled(True)
    return analysis


def write_task(item, analysis, a, ids):
    """Writes DIR/tasks/<id>.yaml; returns the id (a repeated one gets _2, _3, in the order of the modules)."""
    from .task_yaml import dump, task_document, task_id

    tid = base = task_id(a.format, item)
    n = 2
    while tid in ids:
        tid, n = f"{base}_{n}", n + 1
    ids.add(tid)
    doc = task_document(tid, a.format, item, analysis, {"split": a.split, "seed": a.seed, "tolerance": a.tolerance})
    with open(os.path.join(a.out, "tasks", tid + ".yaml"), "w", encoding="utf-8") as f:
        f.write(dump(doc))
    return tid


def outcomes(todo, a, opts):
    """(k, item, Analysis or the exception, seconds) for each module, in order: --jobs of them examined
    at once, each in its worker, from a thread of this process (isolation.py)."""
    def one(k, item):
        t0 = time.monotonic()
        try:
            result = examine(item, k, a, opts)
        except Exception as e:  # noqa: BLE001  (reported by the caller, in order)
            result = e
        return result, time.monotonic() - t0

    if a.jobs == 1 or a.in_process:
        for k, item in enumerate(todo):
            mark_in_flight(a.out, k, item)
            yield (k, item, *one(k, item))
            if a.in_process and k % 16 == 15:  # a full collection costs ~0.25 s with torch loaded
                gc.collect()
        return
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(a.jobs) as pool:
        futures = [pool.submit(one, k, item) for k, item in enumerate(todo)]
        for k, item in enumerate(todo):
            mark_in_flight(a.out, k, item)  # the first module not finished yet
            yield (k, item, *futures[k].result())


def output_lock():
    """isolation.FORK_LOCK: no worker is forked while this process writes its output."""
    from .isolation import FORK_LOCK
    return FORK_LOCK


def mark_in_flight(out, k, item):
    """DIR/in_flight.json names the module being examined (removed at the end of the run): a run that
    something killed from outside says where it stopped."""
    path = os.path.join(out, IN_FLIGHT)
    if item is None:
        if os.path.exists(path):
            os.remove(path)
        return
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"index": k, "file": item.file, "row": item.row}, f)
        f.write("\n")


def main(argv=None):
    a = parse_args(argv)
    try:
        todo = collect(a.format, a.paths, a.level)
    except (InputError, OSError) as e:
        print(f"task_import: {e}", file=sys.stderr)
        return 2
    if a.limit is not None:
        todo = todo[:a.limit]
    from .classify import Options
    from .task_yaml import TOLERANCES
    opts = Options(seed=a.seed, max_bytes=a.max_bytes, timeout_s=a.timeout_s, memory_mb=a.memory_mb,
                   max_processes=a.max_processes, tolerance=TOLERANCES[a.tolerance])
    os.makedirs(os.path.join(a.out, "tasks"), exist_ok=True)
    stale = glob.glob(os.path.join(a.out, "tasks", "*.yaml"))
    for f in stale:  # the folder holds this run's tasks only
        os.remove(f)
    if stale:
        print(f"task_import: removed {len(stale)} task files of an earlier run from {a.out}/tasks", file=sys.stderr)
    start = time.monotonic()
    import torch
    from .classify import warm_up
    a.in_process = a.in_process or not hasattr(os, "fork")
    torch.set_num_threads(a.threads if a.in_process else 1)  # forked workers set their own count: no pool here
    if not a.in_process:
        from .sandbox import become_subreaper
        become_subreaper()
    warm_up()
    counts, ids = {r: 0 for r in REASONS}, set()
    imported = 0
    with open(os.path.join(a.out, "skipped.jsonl"), "w", encoding="utf-8") as skipped, \
            open(os.path.join(a.out, "imported.jsonl"), "w", encoding="utf-8") as done:
        for k, item, result, seconds in outcomes(todo, a, opts):
            with output_lock():
                if isinstance(result, Exception):
                    reason, detail = (result.reason, result.detail) if isinstance(result, Skip) else \
                        ("load_error", f"importer error: {type(result).__name__}: {one_line(result)}")
                    counts[reason] += 1  # an importer failure on one module never ends the run
                    skipped.write(json.dumps({"file": item.file, "row": item.row, "reason": reason, "detail": detail}) + "\n")
                    print(f"[{k + 1}/{len(todo)}] {item.label()}: skipped, {reason}: {detail}", file=sys.stderr, flush=True)
                    continue
                try:
                    tid = write_task(item, result, a, ids)
                except Exception as e:  # noqa: BLE001
                    counts["load_error"] += 1
                    detail = f"importer error: {type(e).__name__}: {one_line(e)}"
                    skipped.write(json.dumps({"file": item.file, "row": item.row, "reason": "load_error", "detail": detail}) + "\n")
                    print(f"[{k + 1}/{len(todo)}] {item.label()}: skipped, load_error: {detail}", file=sys.stderr, flush=True)
                    continue
                imported += 1
                done.write(json.dumps({"id": tid, "file": item.file, "row": item.row, "seconds": round(seconds, 3),
                                       "trace_tier": result.trace_tier, "notes": result.notes}) + "\n")
                print(f"[{k + 1}/{len(todo)}] {item.label()}: imported as {tid} ({seconds:.2f} s)", file=sys.stderr, flush=True)
    mark_in_flight(a.out, None, None)
    seconds = time.monotonic() - start
    summary = {"imported": imported, "skipped": counts, "seconds": round(seconds, 3)}
    with open(os.path.join(a.out, "import_summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
        f.write("\n")
    rate = len(todo) / seconds if seconds > 0 else 0.0
    reasons = ", ".join(f"{r} {n}" for r, n in counts.items() if n)
    print(f"task_import: {len(todo)} modules in {seconds:.2f} s ({rate:.2f} modules/s): imported {imported}, "
          f"skipped {sum(counts.values())}{' (' + reasons + ')' if reasons else ''}; out {a.out}", file=sys.stderr)
    return 0
