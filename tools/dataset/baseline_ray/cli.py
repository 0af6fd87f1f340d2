"""The command line of the Ray driver (tools/dataset/baseline_ray.py): a run over every GPU of a Ray
cluster, or `--merge` of one key's rows (or each key's) into a dataset through the stage's `--merge`
(`kforge tasks set-baselines`)."""
import argparse
import os
import shutil
import signal
import subprocess
import sys

from synth_gpu import InputError, export_tasks, part_files
from synth_gpu.common import ROOT

from . import __doc__ as PACKAGE_DOC
from .keys import is_key, key_dirs

STAGE = os.path.join(ROOT, "tools", "dataset", "synth_gpu.py")


def parser():
    ap = argparse.ArgumentParser(prog="baseline_ray.py", description=PACKAGE_DOC.split("\n\n")[0],
                                 epilog="Arguments after `--` go to every stage process (tools/dataset/synth_gpu.py), "
                                        "e.g. `-- --workers 6 --min-n 5`.")
    ap.add_argument("dataset", help="DIR/dataset.h5 (kforge synth, or kforge tasks pack/import)")
    ap.add_argument("--out", required=True, help="folder of the results: OUT/<gpu>__torch-<v>__cuda-<v>/part-*.jsonl")
    ap.add_argument("--address", default=None,
                    help="the Ray cluster (ray.init's address: host:port, or auto); default: $RAY_ADDRESS, else a "
                         "local Ray started for this run")
    ap.add_argument("--gpus-per-node", type=int, default=None,
                    help="at most this many timing processes per node (default: one per unit of --resource)")
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda",
                    help="the stage's device; cpu: the CI mode (check dims, no cache flush, not a GPU baseline)")
    ap.add_argument("--resource", default=None,
                    help="what one timing process reserves one unit of (default GPU on cuda; on a CPU-only cluster a "
                         "custom resource given by `ray start --resources`, e.g. kforge_gpu)")
    ap.add_argument("--ids", default=None, metavar="FILE", help="only these task ids (one per line), in this order")
    ap.add_argument("--limit", type=int, default=None, help="at most this many rows per key in this run")
    ap.add_argument("--time-budget-s", type=float, default=None,
                    help="hand out no chunk after this many seconds; each stage starts no task that would end after it")
    ap.add_argument("--config", default=os.path.join(ROOT, "configs", "synth.yaml"),
                    help="synthesis config (window, baseline_timing), read by kforge here on the driver")
    ap.add_argument("--chunks-per-process", type=int, default=1,
                    help="contiguous chunks of the rows to do per timing process (each chunk is one stage start-up, "
                         "about 20 s on a GPU host; more chunks balance uneven processes better)")
    ap.add_argument("--python", default=os.environ.get("KFORGE_PYTHON_BIN"),
                    help="the interpreter for the stage on the nodes (default $KFORGE_PYTHON_BIN, else the Ray "
                         "workers' own); it needs torch")
    ap.add_argument("--workdir", default="/tmp/kforge-baseline",
                    help="node-local folder of each process's stage runs (its own rows before collection, logs)")
    ap.add_argument("--pin", action=argparse.BooleanOptionalAction, default=None,
                    help="pin each timing process to its share of the node's cores (default: on with cuda)")
    ap.add_argument("--poll-s", type=float, default=1.0, help="how often rows are collected from the processes")
    ap.add_argument("--progress-s", type=float, default=30.0, help="seconds between progress lines")
    ap.add_argument("--placement-timeout-s", type=float, default=300.0)
    ap.add_argument("--summary", default=None, help="the JSON summary (default OUT/baseline_ray_summary.json)")
    ap.add_argument("--merge", action="store_true",
                    help="merge each key's rows (or --key's) into a copy of DATASET at OUT/KEY/dataset.h5, or into --into")
    ap.add_argument("--key", default=None, help="merge: this key only (a folder name under --out)")
    ap.add_argument("--into", default=None, metavar="FILE",
                    help="merge: into this dataset (DATASET itself, say) instead of a copy per key; one key only")
    ap.add_argument("--allow-cpu", action="store_true", help="merge: accept rows measured with --device cpu")
    ap.add_argument("--plots", action="store_true", help="merge: draw the stage's plots too (matplotlib)")
    return ap


def cmd_merge(a):
    keys = [a.key] if a.key else key_dirs(a.out)
    if not keys:
        raise InputError(f"{a.out}: no key folder with part files (<gpu>__torch-<v>__cuda-<v>/part-*.jsonl)")
    if a.into and len(keys) > 1:
        raise InputError(f"--into takes one key; name it with --key (here: {', '.join(keys)})")
    for key in keys:
        d = os.path.join(a.out, key)
        if not is_key(key) or not part_files(d):
            raise InputError(f"{d}: not a key folder with part files")
        target = a.into
        if not target:
            target = os.path.join(d, "dataset.h5")
            if not os.path.exists(target):
                shutil.copy2(a.dataset, target)
        argv = [sys.executable, STAGE, target, "--merge", "--out", d, "--config", a.config]
        argv += (["--allow-cpu"] if a.allow_cpu else []) + ([] if a.plots else ["--no-plots"])
        print(f"baseline_ray: merge {key} into {target}", file=sys.stderr, flush=True)
        r = subprocess.run(argv)
        if r.returncode != 0:
            return r.returncode
    return 0


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def cmd_run(a):
    import ray
    from .driver import Driver
    os.makedirs(a.out, exist_ok=True)
    # The rows as kforge reads them, here (the nodes get each chunk's lines: no kforge, no dataset needed there).
    settings, tasks = export_tasks(a.dataset, "0/1" if a.ids else "all/1", a.ids, a.config)
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    try:
        ray.init(address=a.address, log_to_driver=False, logging_level="WARNING")
    except (ConnectionError, RuntimeError, ValueError) as e:
        raise InputError(f"cannot reach the Ray cluster{' at ' + a.address if a.address else ''}: {e}") from None
    signal.signal(signal.SIGTERM, _interrupt)  # a terminated driver stops its stages as Ctrl-C does
    driver = Driver(a, settings, tasks)
    try:
        driver.place()
        return driver.run()
    except KeyboardInterrupt:
        print("baseline_ray: interrupted; the rows written so far stay (a rerun continues)", file=sys.stderr, flush=True)
        return 130
    finally:
        driver.shutdown()
        ray.shutdown()


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    stage_args = []
    if "--" in argv:
        i = argv.index("--")
        argv, stage_args = argv[:i], argv[i + 1:]
    a = parser().parse_args(argv)
    a.stage_args, a.root = stage_args, ROOT
    a.resource = a.resource or ("GPU" if a.device == "cuda" else None)
    a.pin = a.device == "cuda" if a.pin is None else a.pin
    try:
        if a.merge:
            return cmd_merge(a)
        if not a.resource:
            raise InputError("--device cpu needs --resource NAME: a custom resource that marks the 'GPUs' of a CPU-only "
                             "cluster (ray start --resources '{\"kforge_gpu\": 2}')")
        if not os.path.exists(a.dataset):
            raise InputError(f"{a.dataset}: no such file")
        for name, v in (("--limit", a.limit), ("--gpus-per-node", a.gpus_per_node)):
            if v is not None and v < (0 if name == "--limit" else 1):
                raise InputError(f"{name} must be >= {0 if name == '--limit' else 1}")
        if a.chunks_per_process < 1:
            raise InputError("--chunks-per-process must be >= 1")
        bad = [s for s in ("--out", "--shard", "--ids", "--exported", "--device", "--time-budget-s", "--limit", "--merge")
               if any(x == s or x.startswith(s + "=") for x in stage_args)]
        if bad:
            raise InputError(f"after --: {', '.join(bad)} is the driver's to set")
        return cmd_run(a)
    except InputError as e:
        print(f"baseline_ray: error: {e}", file=sys.stderr)
        return 1
