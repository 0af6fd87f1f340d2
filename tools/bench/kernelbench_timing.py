"""kforge's baselines of the imported KernelBench tasks side by side with KernelBench's own timing (issue 29).

    "$KFORGE_PYTHON_BIN" tools/bench/kernelbench_timing.py --kernelbench KB --dataset DIR/dataset.h5 --gpu DIR/gpu \\
        --out OUT [--record FILE] [--device cuda] [--ids FILE | --shard k/N] [--time-budget-s S] [--workers W]
        [--trials 100] [--warmup 5] [--max-variant-s 1.5] [--torch-defaults] [--all] [--exported FILE]

For every imported task (`kforge tasks export-gpu` of DIR/dataset.h5, `reference: torchscript`) that the
GPU stage kept (`ok` in the part files of --gpu), the module (the task's program exactly as imported,
built on the device in its own module mode, as the stage builds it) is timed eagerly and under
torch.compile (default mode) with KernelBench's own timing function, `time_execution_with_cuda_event`
of KB/src/kernelbench/timing.py, loaded at run time from the checkout given (its file alone: the
package's __init__ would import openai, litellm and dotenv; nothing of KernelBench is copied here),
with KernelBench's defaults (`measure_ref_program_time`: 5 warm-up calls, 100 trials after one
discarded) and its statistic, `get_timing_stats`' mean. Per task one line of OUT/kernelbench_timing.jsonl
(written and fsync'ed one at a time: a second run resumes, skipping the ids written), and at the end a
results record (tools/bench/results_doc.py; default OUT/kernelbench_timing.json) with the distribution
(median, p10, p90) of the kforge / KernelBench time ratios for eager and for compile, against
KernelBench's mean and against the median of KernelBench's own samples (which separates the statistic
from the rest of the method). Progress goes to stderr.

Systematic differences to expect (kforge: tools/dataset/synth_gpu/timing.py, env/judge/timing.cpp):
  - L2 flush: both flush before every timed call. KernelBench fills a fixed 256 MiB int64 tensor,
    allocated anew each call; kforge writes 2 x the device's L2 with a varying byte pattern and resets
    the persisting L2 lines. Either leaves the L2 cold: little difference expected.
  - Inputs: KernelBench times one get_inputs() draw over and over; kforge draws fresh inputs before
    every call (outside the timed events). Values rarely change a kernel's time (no data-dependent
    kernels among the imported tasks), but a reused input can sit in the memory the last call used.
  - Launch overhead: KernelBench synchronises before every call and records the start event with an
    idle GPU, so the host's launch latency (Python, dispatcher, Inductor's wrapper) lies inside its
    events; kforge times calls in batches of 8 behind the flush kernel, which hides most of it. Small,
    launch-bound tasks (tens of microseconds) should read faster in kforge: ratios below 1.
  - TF32 and cuDNN: kforge runs with TF32 off for cuBLAS and cuDNN (`highest` matmul precision) and
    cudnn.benchmark off; KernelBench leaves torch's defaults, in which cuDNN convolutions may use TF32.
    This script uses kforge's flags by default so that the ratio compares timing methods on the same
    arithmetic; `--torch-defaults` keeps torch's defaults, as KernelBench's own harness does (then
    convolution-heavy tasks read faster in KernelBench).
  - Warm-up: KernelBench 5 calls (the first compiled call is one of them; here the compile and its
    first call come before, so no compile lands in a warm-up); kforge at least 3 rounds and 50 ms.
  - Statistic: KernelBench reports the mean of 100 trials (an outlier, a clock ramp, moves it);
    kforge the median of 10 to 100 calls, stopped at 1 % relative standard error. The
    `*_vs_kb_median` figures divide by the median of KernelBench's samples instead.
  - Trials: with `--max-variant-s` (default 1.5 s) a slow task gets fewer trials than 100 (at least
    10) so that the 243 tasks fit in the GPU time at hand; each row records its trials.

Throughput: per task two timed variants of `--warmup` + 1 + trials calls plus one build and a warm
compile. The torch.compile caches are filled first by `--workers` spawned processes (default: CPUs - 2
on cuda), admitted by memory (1.5 x the stage's `peak_mem_gb` + 1 GiB, within 80 % of the device);
after the GPU stage on the same host they hit its Inductor caches. A run stops starting tasks before
`--time-budget-s`; the same command continues. Where one call cannot do all, split the tasks with
`--shard k/N` (contiguous rows of the dataset) or `--ids FILE`; each split pays the start-up (about
20-40 s: torch, the pool) once.

`--device cpu` is for the tests only: KernelBench's functions are CUDA-only, so the checkout given must
then hold a stand-in timing.py with the same two functions."""
import argparse
import contextlib
import datetime
import importlib.util
import io
import json
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tools", "dataset"))
import results_doc  # noqa: E402
from synth_gpu.common import InputError, error_line, export_tasks, percentile, read_exported  # noqa: E402
from synth_gpu.records import PartWriter, pick_records, read_records  # noqa: E402

TIMING_FN = "time_execution_with_cuda_event"
ROWS = "kernelbench_timing-{k}.jsonl"  # per --shard k/N: processes on several GPUs write apart
T0 = time.monotonic()


def log(msg):
    print(f"kernelbench_timing: {msg}", file=sys.stderr, flush=True)


def kernelbench_timing_file(path):
    """KernelBench's timing.py under a checkout (or its src/, or the file itself)."""
    for c in (path, os.path.join(path, "src", "kernelbench", "timing.py"), os.path.join(path, "kernelbench", "timing.py"),
              os.path.join(path, "timing.py")):
        if os.path.isfile(c):
            return os.path.abspath(c)
    raise InputError(f"--kernelbench {path}: no src/kernelbench/timing.py there")


def load_kernelbench_timing(path):
    """KernelBench's timing module, loaded from its file alone (not through the package)."""
    f = kernelbench_timing_file(path)
    spec = importlib.util.spec_from_file_location("kernelbench_timing_checkout", f)
    mod = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(mod)
    except Exception as e:  # noqa: BLE001
        raise InputError(f"{f} does not load: {error_line(e)}")
    for name in (TIMING_FN, "get_timing_stats"):
        if not callable(getattr(mod, name, None)):
            raise InputError(f"{f} has no function {name}")
    return mod


def level_of(task):
    tid = task["id"]
    return int(tid[4]) if tid.startswith("kb_l") and tid[4:5].isdigit() else None


def kb_trials(a, kforge_ms):
    """KernelBench's trial count, cut for a slow task so that one variant takes about --max-variant-s."""
    if not kforge_ms or kforge_ms <= 0 or a.max_variant_s <= 0:
        return a.trials
    return max(min(a.trials, 10), min(a.trials, int(a.max_variant_s * 1e3 / kforge_ms)))


def sample_stats(times):
    s = sorted(times)
    return {"median_ms": percentile(s, 0.5), "p10_ms": percentile(s, 0.1), "p90_ms": percentile(s, 0.9), "n": len(s)}


# -- the compile workers: fill the torch.compile caches before anything is timed --------------------
def _worker_init(cpus):
    os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
    if cpus:
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, cpus)


def warm_job(job):
    """In a worker: build the task on the device, torch.compile it and call it once (fills Inductor's
    on-disk caches). (id, seconds, error or "")."""
    t = time.monotonic()
    import torch
    from synth_gpu.torch_env import apply_flags, build_task, release
    if not job["torch_defaults"]:
        apply_flags(torch)
    try:
        model, draw = build_task(torch, job["id"], job["program"], None, job["device"], job["seed"], job["module_mode"])
        with torch.no_grad():
            torch.compile(model)(*draw())
        if job["device"].startswith("cuda"):
            torch.cuda.synchronize()
        err = ""
    except Exception as e:  # noqa: BLE001
        err = error_line(e)
    model = draw = None
    release(torch, job["device"])
    return job["id"], time.monotonic() - t, err


def prewarm(a, todo, peaks, deadline, total_mem):
    """Compiles `todo` in --workers processes until `deadline`; {id: (seconds, error)}."""
    import concurrent.futures as cf
    import multiprocessing as mp
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = []
    wcpus = cpus[:-2] if a.device.startswith("cuda") and len(cpus) > 4 else cpus
    cap = 0.8 * total_mem if total_mem else float("inf")
    done, running, queue = {}, {}, list(todo)
    used = 0.0
    ex = cf.ProcessPoolExecutor(a.workers, mp_context=mp.get_context("spawn"), initializer=_worker_init, initargs=(wcpus,))
    try:
        while (queue or running) and time.monotonic() < deadline:
            while queue and time.monotonic() < deadline:
                t = queue[0]
                claim = 1.5 * peaks.get(t["id"], 8.0) * 2**30 + 2**30
                if running and (len(running) >= a.workers or used + claim > cap):
                    break
                queue.pop(0)
                job = {k: t[k] for k in ("id", "seed", "module_mode")}
                job.update(program=t["program_py"], device=a.device, torch_defaults=a.torch_defaults)
                running[ex.submit(warm_job, job)] = claim
                used += claim
            fin, _ = cf.wait(list(running), timeout=max(0.1, min(5.0, deadline - time.monotonic())),
                             return_when=cf.FIRST_COMPLETED)
            for f in fin:
                used -= running.pop(f)
                try:
                    tid, secs, err = f.result()
                except Exception as e:  # noqa: BLE001 - a worker that died
                    log(f"a compile worker failed: {error_line(e)}")
                    continue
                done[tid] = (secs, err)
            if fin:
                log(f"compiled {len(done)}/{len(todo)} ahead of the timing ({len(running)} running, "
                    f"{time.monotonic() - T0:.0f} s elapsed)")
    finally:
        for p in list(getattr(ex, "_processes", {}).values()):  # cut compiles still running at the deadline
            with contextlib.suppress(Exception):
                p.kill()
        ex.shutdown(wait=False, cancel_futures=True)
    return done


# -- the timing ---------------------------------------------------------------------------------
def time_variant(kb, fn, args, a, trials, device):
    """KernelBench's timing function on fn(*args): (its get_timing_stats, its samples' quantiles)."""
    dev = device if device.startswith("cuda") else None
    with contextlib.redirect_stdout(io.StringIO()):  # it prints a line per call ("[Profiling] ...")
        times = getattr(kb, TIMING_FN)(fn, args, num_warmup=a.warmup, num_trials=trials, discard_first=1,
                                       verbose=False, device=dev)
        st = kb.get_timing_stats(times, device=dev)
    return {k: v for k, v in st.items() if k in ("mean", "std", "min", "max", "num_trials")}, sample_stats(times)


def time_task(torch, kb, a, task, kf):
    """One task's row: KernelBench's timing of eager and of torch.compile, beside kforge's baselines."""
    from synth_gpu.torch_env import build_task, release
    t0 = time.monotonic()
    row = {"id": task["id"], "level": level_of(task), "module_mode": task.get("module_mode", "eval"),
           "kforge": {k: kf.get(k) for k in ("status", "eager_ms", "compile_ms")}}
    trials = kb_trials(a, max(kf.get("eager_ms") or 0, kf.get("compile_ms") or 0))
    row["trials"], row["warmup"] = trials, a.warmup
    try:
        torch.manual_seed(42)
        model, draw = build_task(torch, task["id"], task["program_py"], None, a.device, task["seed"],
                                 task.get("module_mode", "eval"))
        inputs = draw()
        with torch.no_grad():
            row["kb_eager"], row["kb_eager_samples"] = time_variant(kb, model, inputs, a, trials, a.device)
            torch._dynamo.reset()
            compiled = torch.compile(model)
            tc = time.monotonic()
            compiled(*inputs)
            if a.device.startswith("cuda"):
                torch.cuda.synchronize()
            row["compile_first_call_s"] = round(time.monotonic() - tc, 3)
            row["kb_compile"], row["kb_compile_samples"] = time_variant(kb, compiled, inputs, a, trials, a.device)
        row["status"] = "ok"
    except Exception as e:  # noqa: BLE001
        row.update(status="failed", error=error_line(e))
    model = compiled = inputs = draw = None
    release(torch, a.device)
    for v in ("eager", "compile"):
        kfm, kb_st, kb_s = kf.get(f"{v}_ms"), row.get(f"kb_{v}"), row.get(f"kb_{v}_samples")
        if kfm and kb_st and kb_st.get("mean"):
            row[f"{v}_ratio"] = kfm / kb_st["mean"]
            row[f"{v}_ratio_vs_kb_median"] = kfm / kb_s["median_ms"] if kb_s.get("median_ms") else None
    row["seconds"] = round(time.monotonic() - t0, 3)
    return row


# -- the record -----------------------------------------------------------------------------------
def figures_of(rows, n_tasks):
    ok = [r for r in rows if r.get("status") == "ok"]
    f = {"tasks_count": n_tasks, "timed_count": len(ok), "failed_count": sum(1 for r in rows if r.get("status") != "ok"),
         "left_count": max(0, n_tasks - len(rows))}
    for key in ("eager_ratio", "compile_ratio", "eager_ratio_vs_kb_median", "compile_ratio_vs_kb_median"):
        vals = [r[key] for r in ok if isinstance(r.get(key), (int, float)) and math.isfinite(r[key]) and r[key] > 0]
        if vals:
            f[f"{key}_median"] = round(percentile(vals, 0.5), 4)
            f[f"{key}_p10"] = round(percentile(vals, 0.1), 4)
            f[f"{key}_p90"] = round(percentile(vals, 0.9), 4)
            f[f"{key}_geomean"] = round(math.exp(sum(math.log(v) for v in vals) / len(vals)), 4)
            f[f"{key}_count"] = len(vals)
    sp = [r["kb_eager"]["mean"] / r["kb_compile"]["mean"] for r in ok if r["kb_compile"].get("mean")]
    if sp:
        f["kb_compile_speedup_median"] = round(percentile(sp, 0.5), 4)
    sp = [r["kforge"]["eager_ms"] / r["kforge"]["compile_ms"] for r in ok if r["kforge"].get("compile_ms")]
    if sp:
        f["kforge_compile_speedup_median"] = round(percentile(sp, 0.5), 4)
    secs = [r["seconds"] for r in rows if isinstance(r.get("seconds"), (int, float))]
    if secs:
        f["seconds_per_task_median"] = round(percentile(secs, 0.5), 3)
        f["seconds_total"] = round(sum(secs), 1)
    return f


def write_record(a, rows, n_tasks, env):
    levels = {}
    for r in rows:
        if r.get("status") == "ok" and r.get("eager_ratio"):
            levels.setdefault(str(r.get("level")), []).append(r["eager_ratio"])
    doc = {"gpu": env.get("gpu", ""), "driver": env.get("driver", ""), "cuda": env.get("cuda", ""), "torch": env.get("torch", ""),
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), "commit": results_doc.commit(),
           "command": " ".join(["tools/bench/kernelbench_timing.py", *sys.argv[1:]]), "figures": figures_of(rows, n_tasks),
           "details": {"rows": os.path.join(a.out, ROWS.format(k="*")), "kernelbench_timing_file": kernelbench_timing_file(a.kernelbench),
                       "method": f"KernelBench {TIMING_FN}: warm-up {a.warmup}, up to {a.trials} trials after 1 discarded "
                                 f"(fewer beyond --max-variant-s {a.max_variant_s}), mean; flags "
                                 f"{'torch defaults' if a.torch_defaults else 'kforge (TF32 off, cudnn.benchmark off)'}",
                       "eager_ratio_median_by_level": {k: round(percentile(v, 0.5), 4) for k, v in sorted(levels.items())},
                       "failed": {r["id"]: r.get("error", "") for r in rows if r.get("status") != "ok"},
                       "env": env}}
    results_doc.write(a.record, doc, "kernelbench_timing")
    return doc


# -- the run ----------------------------------------------------------------------------------------
def read_rows(out):
    """{id: row} of every kernelbench_timing-*.jsonl in `out` (a torn last line ignored; the last row of an id wins)."""
    import glob
    rows = {}
    for path in sorted(glob.glob(os.path.join(out, ROWS.format(k="*")))):
        with open(path) as f:
            for line in f:
                if line.endswith("\n"):
                    with contextlib.suppress(ValueError):
                        r = json.loads(line)
                        rows[r["id"]] = r
    return rows


def select(a):
    """(tasks of this run in order, kforge's records by id, skipped by reason)."""
    _, exported = read_exported(a.exported, a.shard, a.ids) if a.exported else export_tasks(a.dataset, a.shard, a.ids, a.config)
    imported = [t for t in exported if t.get("reference") == "torchscript"]
    recs = pick_records(read_records(a.gpu)) if a.gpu and os.path.isdir(a.gpu) else {}
    if a.gpu and not recs:
        raise InputError(f"--gpu {a.gpu}: no GPU stage records there")
    tasks, skipped = [], {}
    for t in imported:
        r = recs.get(t["id"])
        why = "no kforge record" if r is None else ("" if r["status"] == "ok" else r["status"])
        if why and not a.all:
            skipped[why] = skipped.get(why, 0) + 1
            continue
        tasks.append(t)
    return tasks, recs, skipped


def run(a):
    os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")  # as the GPU stage: its cache entries hit
    kb = load_kernelbench_timing(a.kernelbench)
    tasks, recs, skipped = select(a)
    os.makedirs(a.out, exist_ok=True)
    path = os.path.join(a.out, ROWS.format(k=a.shard.split("/")[0]))
    done = read_rows(a.out)
    todo = [] if a.record_only else [t for t in tasks if t["id"] not in done]
    if a.limit is not None:
        todo = todo[:a.limit]
    log(f"{len(tasks)} imported task(s) to time ({', '.join(f'{k} {v}' for k, v in sorted(skipped.items())) or 'none'} "
        f"left out), {len(tasks) - len([t for t in tasks if t['id'] not in done])} already written, {len(todo)} in this run; "
        f"KernelBench's {TIMING_FN} from {kernelbench_timing_file(a.kernelbench)}")
    import torch
    from synth_gpu.torch_env import apply_flags, environment
    if a.device.startswith("cuda") and not torch.cuda.is_available():
        raise InputError(f"--device {a.device}: no CUDA device (use --device cpu with a stand-in timing.py, tests only)")
    if not a.torch_defaults:
        apply_flags(torch)
    env = environment(torch, a.device)
    deadline = T0 + a.time_budget_s if a.time_budget_s else float("inf")
    kf = {t["id"]: recs.get(t["id"], {}) for t in tasks}
    warmed = {}
    if a.workers > 0 and todo:
        total = torch.cuda.get_device_properties(torch.device(a.device)).total_memory if a.device.startswith("cuda") else 0
        peaks = {i: r.get("peak_mem_gb") or 8.0 for i, r in kf.items()}
        warm_deadline = time.monotonic() + a.warm_share * (deadline - time.monotonic()) if math.isfinite(deadline) else deadline
        warmed = prewarm(a, todo, peaks, warm_deadline, total)
        fails = sum(1 for _, e in warmed.values() if e)
        log(f"compile workers: {len(warmed)} of {len(todo)} compiled ahead ({fails} failed there), "
            f"{time.monotonic() - T0:.0f} s elapsed")
    if a.device.startswith("cuda") and a.main_cpus > 0:
        with contextlib.suppress(AttributeError, OSError):
            os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[-a.main_cpus:])
    writer = PartWriter(path)
    n, spent, stopped = 0, [], ""
    try:
        for t in todo:
            left = deadline - time.monotonic()
            est = max(spent) * 1.2 if spent else 10.0
            if left < est:
                stopped = f"time budget ({left:.0f} s left, a task may take {est:.0f} s)"
                break
            row = time_task(torch, kb, a, t, kf[t["id"]])
            row["compiled_ahead"] = t["id"] in warmed and not warmed[t["id"]][1]
            row["env_gpu"] = env.get("gpu", "")
            writer.write(row)
            spent.append(row["seconds"])
            n += 1
            el = time.monotonic() - T0
            log(f"{n}/{len(todo)} {t['id']}: {row['status']} kb eager {row.get('kb_eager', {}).get('mean')} ms, "
                f"compile {row.get('kb_compile', {}).get('mean')} ms; kforge {row['kforge'].get('eager_ms')}, "
                f"{row['kforge'].get('compile_ms')} ms ({row['seconds']:.1f} s) | elapsed {el:.0f} s"
                + (f", budget left {deadline - time.monotonic():.0f} s" if math.isfinite(deadline) else ""))
    finally:
        writer.close()
    rows = list(read_rows(a.out).values())
    rows = [r for r in rows if r["id"] in kf]
    doc = write_record(a, rows, len(tasks), env)
    left = len(tasks) - len(rows)
    print(f"kernelbench_timing: wrote {n} row(s) to {path}; {len(rows)} of {len(tasks)} done, {left} left"
          + (f" (stopped: {stopped}; rerun the same command to continue)" if left else "")
          + "\n" + json.dumps(doc["figures"]), flush=True)
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kernelbench", required=True, help="a KernelBench checkout (its src/kernelbench/timing.py is used)")
    p.add_argument("--dataset", required=True, help="the imported tasks' dataset.h5 (kforge tasks import)")
    p.add_argument("--gpu", default=None, help="the GPU stage's part files (default: DATASET's folder/gpu)")
    p.add_argument("--out", required=True, help="folder of kernelbench_timing.jsonl (resumed)")
    p.add_argument("--record", default=None, help="the results record (default OUT/kernelbench_timing.json)")
    p.add_argument("--device", default="cuda")
    p.add_argument("--config", default=None, help="synthesis config for kforge tasks export-gpu")
    p.add_argument("--exported", default=None, metavar="FILE",
                   help="the tasks from this output of `kforge tasks export-gpu DATASET --shard all/1 --out FILE` "
                        "(a host without a kforge build)")
    p.add_argument("--shard", default="0/1", help="k/N: the k-th of N contiguous blocks of the dataset's rows")
    p.add_argument("--ids", default=None, help="only these task ids (one per line; with --shard k/N)")
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--record-only", action="store_true", help="time nothing: the record of the rows written so far")
    p.add_argument("--all", action="store_true", help="also the tasks the GPU stage rejected or has not measured")
    p.add_argument("--time-budget-s", type=float, default=None, help="start no task that would end after this")
    p.add_argument("--workers", type=int, default=None,
                   help="processes that fill the torch.compile caches first (default CPUs - 2 on cuda, 0 on cpu)")
    p.add_argument("--warm-share", type=float, default=0.5, help="share of the budget the compile workers may take")
    p.add_argument("--main-cpus", type=int, default=2, help="cuda: CPUs the timing process keeps to itself (0: no pinning)")
    p.add_argument("--trials", type=int, default=100, help="KernelBench's num_trials (measure_ref_program_time: 100)")
    p.add_argument("--warmup", type=int, default=5, help="KernelBench's num_warmup (measure_ref_program_time: 5)")
    p.add_argument("--max-variant-s", type=float, default=1.5,
                   help="fewer trials (at least 10) for a task whose kforge time x trials passes this; 0: never")
    p.add_argument("--torch-defaults", action="store_true",
                   help="torch's default precision flags, as KernelBench's harness (default: kforge's, TF32 off)")
    a = p.parse_args(argv)
    a.gpu = a.gpu or os.path.join(os.path.dirname(os.path.abspath(a.dataset)), "gpu")
    a.record = a.record or os.path.join(a.out, "kernelbench_timing.json")
    if a.workers is None:
        try:
            n_cpus = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            n_cpus = os.cpu_count() or 2
        a.workers = max(1, n_cpus - 2) if a.device.startswith("cuda") else 0
    try:
        if a.trials < 1 or a.warmup < 0 or a.workers < 0:
            raise InputError("--trials >= 1, --warmup >= 0, --workers >= 0")
        return run(a)
    except InputError as e:
        print(f"kernelbench_timing: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
