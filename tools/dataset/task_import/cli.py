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
    p.add_argument("--max-bytes", type=int, default=4 << 30, help="skip (too_large) above this many argument bytes")
    p.add_argument("--timeout-s", type=float, default=300.0, help="time limit per module, for loading and for running")
    p.add_argument("--memory-mb", type=int, default=16384,
                   help="address space of a module's worker in MiB (RLIMIT_AS; torch alone takes about 3 GiB)")
    p.add_argument("--max-processes", type=int, default=256,
                   help="processes a module's worker may have (RLIMIT_NPROC of its user; a fork bomb stops there)")
    p.add_argument("--in-process", action="store_true",
                   help="examine modules in this process, not each in a forked worker (for debugging)")
    p.add_argument("paths", nargs="+", metavar="PATH")
    a = p.parse_args(argv)
    if a.limit is not None and a.limit < 0:
        p.error("--limit must be >= 0")
    if a.max_bytes <= 0 or a.timeout_s <= 0 or a.memory_mb <= 0 or a.max_processes <= 0:
        p.error("--max-bytes, --timeout-s, --memory-mb and --max-processes must be > 0")
    if a.level is not None and a.format != "kernelbench":
        p.error("--level is for --format kernelbench")
    return a


def import_one(item, k, a, opts, ids):
    """(task id, notes) or raises Skip."""
    import torch

    from .classify import analyze
    from .task_yaml import dump, task_document, task_id

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
    tid = base = task_id(a.format, item)
    n = 2
    while tid in ids:
        tid, n = f"{base}_{n}", n + 1
    ids.add(tid)
    doc = task_document(tid, a.format, item, analysis, {"split": a.split, "seed": a.seed, "tolerance": a.tolerance})
    with open(os.path.join(a.out, "tasks", tid + ".yaml"), "w", encoding="utf-8") as f:
        f.write(dump(doc))
    return tid, analysis.notes


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
    a.threads = torch.get_num_threads()
    if not a.in_process:
        torch.set_num_threads(1)  # no OpenMP pool in the parent: the forked workers set their own count
        from .sandbox import become_subreaper
        become_subreaper()
    warm_up()
    counts, ids = {r: 0 for r in REASONS}, set()
    imported = 0
    with open(os.path.join(a.out, "skipped.jsonl"), "w", encoding="utf-8") as skipped, \
            open(os.path.join(a.out, "imported.jsonl"), "w", encoding="utf-8") as done:
        for k, item in enumerate(todo):
            t0 = time.monotonic()
            mark_in_flight(a.out, k, item)
            try:
                tid, notes = import_one(item, k, a, opts, ids)
            except Skip as s:
                counts[s.reason] += 1
                skipped.write(json.dumps({"file": item.file, "row": item.row, "reason": s.reason, "detail": s.detail}) + "\n")
                print(f"[{k + 1}/{len(todo)}] {item.label()}: skipped, {s.reason}: {s.detail}", file=sys.stderr, flush=True)
                continue
            except Exception as e:  # an importer failure on one module never ends the run
                counts["load_error"] += 1
                detail = f"importer error: {type(e).__name__}: {one_line(e)}"
                skipped.write(json.dumps({"file": item.file, "row": item.row, "reason": "load_error", "detail": detail}) + "\n")
                print(f"[{k + 1}/{len(todo)}] {item.label()}: skipped, load_error: {detail}", file=sys.stderr, flush=True)
                continue
            finally:
                if a.in_process and k % 16 == 15:  # a full collection costs ~0.25 s with torch loaded
                    gc.collect()
            imported += 1
            seconds = round(time.monotonic() - t0, 3)
            done.write(json.dumps({"id": tid, "file": item.file, "row": item.row, "seconds": seconds, "notes": notes}) + "\n")
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
