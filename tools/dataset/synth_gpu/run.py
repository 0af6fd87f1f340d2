"""One run of the GPU stage over its tasks: the probe (build, output checks, a short probe of the
eager time), the timing of eager against torch.compile, and the record of each task. The order of
the work (rounds, overlap) is in loops.py; the compile workers in pool.py."""
import contextlib
import datetime
import math
import os
import sys
import time
import traceback

from . import artifact_check
from .checks import FUSED, failing_fraction, run_checks
from .common import PHASES, START, TOOL, duration, error_line, percentile
from .loops import Loops, cpu_text
from .records import PartWriter
from .timing import AboveWindow, Timer, measure
from .torch_env import as_outputs, build_task, cuda_healthy, environment, flags_record, is_oom, release



class Phases:
    """Seconds per phase of one task in the main process (the record's phase_s):
    mem_wait      waiting until the compile jobs' memory and this task's fit on the device (overlap)
    exec_build    exec of the program, Model(*get_init_inputs()) at full size (probe and timing)
    checks        the probe's output checks, and the compiled-against-eager check
    probe_timing  the probe's timed calls (--probe-n)
    compile_warm  torch.compile in this process (warm caches) and its first call
    lock_wait     waiting for the GPU turn (a compile worker's GPU work in flight)
    timing        warm-up and timed calls of eager and compiled (the GPU turn held)
    release       freeing the task's memory (Dynamo reset, cycles, allocator cache)
    other         the rest of wall_s (draws outside the phases above, Python, bookkeeping)"""

    def __init__(self):
        self.s = {}

    @contextlib.contextmanager
    def __call__(self, name):
        t = time.monotonic()
        try:
            yield
        finally:
            self.s[name] = self.s.get(name, 0.0) + time.monotonic() - t

    def record(self, wall):
        out = {k: round(self.s[k], 3) for k in PHASES if k in self.s}
        out["other"] = round(max(0.0, wall - sum(out.values())), 3)
        return out


class _Failure:
    """A failed step, kept as text (no reference to the frames and their tensors)."""

    def __init__(self, reason, e):
        self.reason, self.error, self.oom = reason, error_line(e), is_oom(e)
        self.tb = traceback.format_exc(limit=3)[-1000:]


def parse_cpulist(text):
    cpus = set()
    for part in text.strip().split(","):
        if "-" in part:
            lo, hi = part.split("-")
            cpus.update(range(int(lo), int(hi) + 1))
        elif part:
            cpus.add(int(part))
    return cpus


def split_cpus(reserved):
    """(main, workers): `reserved` CPUs of those this process may use for the timing process (the
    highest-numbered ones, whole cores where the kernel says which logical CPUs share one), the rest
    for the compile workers; (None, None) when there are too few to split."""
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None, None
    if reserved <= 0 or len(cpus) <= reserved:
        return None, None
    allowed, seen, groups = set(cpus), set(), []
    for c in cpus:
        if c in seen:
            continue
        sib = {c}
        try:
            with open(f"/sys/devices/system/cpu/cpu{c}/topology/thread_siblings_list") as f:
                sib |= parse_cpulist(f.read())
        except (OSError, ValueError):
            pass
        sib &= allowed
        seen |= sib
        groups.append(sorted(sib))
    main = []
    for g in reversed(groups):
        if len(main) >= reserved:
            break
        main += g
    workers = [c for c in cpus if c not in main]
    return (sorted(main), workers) if workers else (None, None)


class Run(Loops):
    def __init__(self, a, torch):
        self.a = a
        self.torch = torch
        self.t0 = float(os.environ.get("KFORGE_SYNTH_GPU_T0", START))
        os.environ["KFORGE_SYNTH_GPU_T0"] = repr(self.t0)  # a re-exec keeps the original clock
        self.deadline = self.t0 + a.time_budget_s if a.time_budget_s else float("inf")
        self.timer = Timer(torch, a.device, a.timing)
        self.env = environment(torch, a.device)
        self.cuda = a.device.startswith("cuda")
        self.overlap = bool(a.overlap and a.workers > 0)
        self.flags = flags_record(torch)
        self.flags["overlap"] = str(self.overlap).lower()
        self.method = self.timer.method()
        self.written = self.ok = 0
        self.rejected = {}
        self.serial_s = []   # per task: probe + timing seconds
        self.probe_s = []    # per task that passed the probe: its probe seconds
        self.time_s = []     # per timed task: seconds after the probe
        self.compile_s = []  # per task: cold compile seconds (in a worker)
        self.peaks = []      # probe peaks (bytes)
        self.acc = {}        # phase_s summed over the records of this run
        self.waits = {"compile": 0.0}  # the main process idle, waiting for compiles (outside any task)
        self.last_progress = 0.0
        self.pool = None
        self.turn = None
        self.specs = None    # the imported tasks' specs, for the artifact check (artifact_check.Specs)
        self.inflight = {}   # task id -> task, its compile submitted and not finished
        self.compiled = {}   # task id -> (cold seconds, worker info): compiled, not yet timed
        self.writers = {}
        self.total = self.resumed = 0
        self.go_t0 = time.monotonic()
        self.mem_total = torch.cuda.get_device_properties(torch.device(a.device)).total_memory if self.cuda else 0
        self.main_base = torch.cuda.memory_reserved() if self.cuda else 0  # the flush buffer
        self.since_freeze = 0
        self.froze_after_compile = False
        self.main_cpus, self.worker_cpus = split_cpus(a.reserved_cores)
        self.env["main_cpus"] = cpu_text(self.main_cpus)
        self.env["worker_cpus"] = cpu_text(self.worker_cpus)

    def left(self):
        return self.deadline - time.monotonic()

    def est_task_s(self):
        serial = sum(self.serial_s) / len(self.serial_s) if self.serial_s else (4.0 if self.cuda else 5.0)
        comp = sum(self.compile_s) / len(self.compile_s) if self.compile_s else 20.0
        return serial + comp / max(1, self.a.workers)

    def est_probe_s(self):
        return sum(self.probe_s) / len(self.probe_s) if self.probe_s else 2.0

    def est_time_s(self):
        return sum(self.time_s) / len(self.time_s) if self.time_s else (2.0 if self.cuda else 3.0)

    def reserve_s(self):
        """Time kept in hand before starting one more task."""
        worst = max(self.serial_s) if self.serial_s else 10.0
        return min(120.0, max(5.0, 1.5 * worst))

    def record(self, task, status, reason="", **fields):
        rec = {"id": task["id"], "row": task["row"], "shard": f"{task['shard']}/{self.a.shard_n}",
               "graph_hash": task["graph_hash"], "est_runtime_ms": task["est_ms"], "status": status, "reason": reason,
               "dtype": task["dtype"],
               "dims": "full" if task["dims"] is None else "check", "window_ms": self.a.cfg["window_ms"]}
        if task.get("oom_retry"):
            fields["oom_retry"] = True
        rec.update(fields)
        rec["checks_impl"] = "fused" if FUSED.enabled and "ok" in FUSED.state.values() else "torch"
        flags = dict(self.flags, module_mode=task.get("module_mode", "eval"))  # the mode this task's module ran in
        rec.update({"env": self.env, "method": self.method, "flags": flags, "tool": TOOL,
                    "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")})
        for k in ("eager_ms", "compile_ms", "probe_eager_ms"):
            if k in rec and rec[k] is not None and not math.isfinite(rec[k]):
                rec[k] = None
        for k, v in (rec.get("phase_s") or {}).items():
            self.acc[k] = self.acc.get(k, 0.0) + v
        k = task["shard"]
        if k not in self.writers:
            self.writers[k] = PartWriter(os.path.join(self.a.out, f"part-{k}.jsonl"))
        self.writers[k].write(rec)
        self.written += 1
        if status == "ok":
            self.ok += 1
        else:
            self.rejected[reason] = self.rejected.get(reason, 0) + 1
        self.progress()

    def progress(self, force=False):
        now = time.monotonic()
        if not force and now - self.last_progress < self.a.progress_s:
            return
        self.last_progress = now
        el = now - self.t0
        rate = self.written / el if el > 0 else 0
        todo = self.total - self.written
        left = todo / rate if rate > 0 else None
        rej = ", ".join(f"{k} {v}" for k, v in sorted(self.rejected.items())) or "none"
        budget = f" | budget left {duration(self.left())}" if math.isfinite(self.deadline) else ""
        sampling = self.acc.get("timing", 0.0) + self.acc.get("probe_timing", 0.0)
        print(f"synth_gpu: shard {self.a.shard} | {self.written}/{self.total} this run (+{self.resumed} resumed) | "
              f"ok {self.ok} | rejected {sum(self.rejected.values())} ({rej}) | {rate * 60:.1f} tasks/min | "
              f"elapsed {duration(el)} | left ~{duration(left)}{budget} | sampling {100 * sampling / max(el, 1e-9):.0f} % "
              f"of elapsed, waited {self.waits['compile']:.0f} s for compiles", file=sys.stderr, flush=True)

    def time_report(self):
        """One line: where this run's time went (main process and compile workers)."""
        now = time.monotonic()
        ph = self.acc
        tasks_s = sum(ph.values())
        between = max(0.0, now - self.go_t0 - tasks_s - self.waits["compile"])
        parts = ", ".join(f"{k} {ph[k]:.1f}" for k in PHASES + ("other",) if ph.get(k))
        s = (f"synth_gpu: time (s): elapsed {now - self.t0:.1f} = start-up {self.go_t0 - self.t0:.1f} + tasks {tasks_s:.1f}"
             f" ({parts or '-'}) + waiting for compiles {self.waits['compile']:.1f} + between tasks {between:.1f}"
             f" | overlap {self.flags['overlap']}, main CPUs {self.env['main_cpus']} | checks: {FUSED.describe()}")
        p = self.pool
        if p:
            life = max(1e-9, now - p.t_start)
            work = ", ".join(f"{k} {p.acc.get(k, 0.0):.1f}" for k in ("compile", "gpu_turn", "lock_wait", "release", "other"))
            s += (f" | compile workers: {p.n} x {life:.1f} s, {p.jobs_done} jobs, busy {p.busy_s:.1f} "
                  f"({100 * p.busy_s / (p.n * life):.0f} %: {work}), jobs queued {p.acc['queue']:.1f}")
        return s

    def maybe_freeze(self):
        """After the first timed task (its compile imported most of Dynamo and Inductor: about 270k
        objects, a 0.13-s pass) and then every 25 tasks, between tasks (no task objects alive): a full
        cycle pass, then everything left is moved out of the collector's sight (gc.freeze), so that
        the per-task pass and the automatic ones (which could land in a timed call) stay cheap;
        unfreezing first bounds what a frozen cycle could keep."""
        import gc
        self.since_freeze += 1
        first = bool(self.time_s) and not self.froze_after_compile
        if self.since_freeze < 25 and not first:
            return
        self.froze_after_compile = self.froze_after_compile or bool(self.time_s)
        self.since_freeze = 0
        gc.unfreeze()
        gc.collect()
        gc.freeze()

    # -- the pool, memory, the GPU turn -----------------------------------------------------------
    def pump(self, timeout=0.0):
        """Collects finished compiles (a failure is recorded at once) and starts what fits."""
        if not self.pool:
            return
        for job, err, secs, info in self.pool.poll(timeout):
            t = self.inflight.pop(job["id"], None)
            if t is None:
                continue
            self.compile_s.append(secs)
            t["compile_queue_s"] = round(job.get("t_start", job["t_submit"]) - job["t_submit"], 3)
            t["compile_worker_s"] = {k: round(v, 3) for k, v in info.items()}
            t["compiled_at"] = time.monotonic()
            if err:
                self.record(t, "rejected:torch_compile_build", "torch_compile_build", error=err,
                            probe_eager_ms=t["probe_ms"], checks=t["checks"], compile_cold_s=round(secs, 3),
                            compile_worker_s=t["compile_worker_s"], compile_queue_s=t["compile_queue_s"],
                            wall_s=round(t["probe_s"], 3), phase_s=t["phase_probe"])
            else:
                self.compiled[t["id"]] = (secs, t["compile_worker_s"])

    def submit(self, t):
        self.inflight[t["id"]] = t
        self.pool.submit({"id": t["id"], "program": t["program"], "dims": t["dims"], "seed": t["seed"],
                          "module_mode": t.get("module_mode", "eval"),
                          "mem": self.a.compile_mem_factor * t["peak_mem_bytes"] + (1 << 30)})

    def probe_claim(self):
        """Device bytes a probe may need before its peak is known: from the peaks seen so far (p90)."""
        if len(self.peaks) < 5:
            return 16.0 * 2**30
        return self.a.compile_mem_factor * percentile(self.peaks, 0.9) + (1 << 30)

    def admit(self, claim, ph):
        """Overlap on CUDA: before this process's next step on the device, waits (starting no new
        compile job) until the running jobs' memory and `claim` fit under the cap, and until no job
        needs the device alone; then claims `claim` bytes, which new jobs leave free."""
        pool = self.pool
        if not (self.overlap and self.cuda and pool):
            return
        with ph("mem_wait"):
            if pool.alone_waiting() or (pool.running() and pool.in_use() + claim > pool.cap):
                pool.main_claim, pool.hold = 0.0, True
                try:
                    while pool.alone_waiting() or (pool.running() and pool.in_use() + claim > pool.cap):
                        self.pump(0.05)
                finally:
                    pool.hold = False
            pool.main_claim = claim

    def drain(self, ph):
        """Waits until no compile job runs (before this process redoes a step that ran out of memory)."""
        pool = self.pool
        with ph("mem_wait"):
            pool.main_claim, pool.hold = 0.0, True
            try:
                while pool.running() or pool.alone_waiting():
                    self.pump(0.05)
            finally:
                pool.hold = False
        release(self.torch, self.a.device)

    def may_retry_oom(self):
        return self.overlap and self.cuda and self.pool is not None

    @contextlib.contextmanager
    def sampling(self, ph, name):
        """The GPU turn around one task's timed calls: no compile worker's GPU work while they run."""
        if self.turn is None:
            with ph(name):
                yield
            return
        with ph("lock_wait"):
            self.turn.acquire()
        self.turn.sampling.value = 1
        try:
            with ph(name):
                yield
        finally:
            self.turn.sampling.value = 0
            self.turn.release()

    # -- stage 1: build, checks, probe -----------------------------------------------------------
    def probe(self, task):
        ph = task["ph"] = Phases()
        t0 = time.monotonic()
        claim = self.probe_claim()
        for attempt in (0, 1):
            res = self._probe(task, ph, claim)
            if isinstance(res, _Failure):
                if res.oom and attempt == 0 and self.may_retry_oom():
                    task["oom_retry"] = True  # out of memory next to the compile jobs: again, alone
                    self.drain(ph)
                    claim = self.pool.cap
                    continue
                return self.fail_row(task, res, t0)
            break
        reason, checks, probe_ms, peak = res
        task["peak_mem_bytes"] = peak
        task["probe_ms"] = probe_ms
        task["checks"] = checks
        task["probe_s"] = time.monotonic() - t0
        task["phase_probe"] = ph.record(task["probe_s"])
        if reason:
            self.record(task, "rejected:" + reason, reason, eager_ms=probe_ms, probe_eager_ms=probe_ms,
                        checks=checks, peak_mem_gb=round(peak / 2**30, 3), wall_s=round(task["probe_s"], 3),
                        phase_s=task["phase_probe"],
                        note="rejected by the probe (n=%d)" % self.a.probe_n if probe_ms is not None else "")
            self.serial_s.append(task["probe_s"])
            return False
        self.peaks.append(peak)
        self.probe_s.append(task["probe_s"])
        return True

    def _probe(self, task, ph, claim):
        """(reason, checks, probe_ms, peak) or a _Failure; returns with the task's memory freed."""
        torch, a = self.torch, self.a
        self.admit(claim, ph)
        base = None
        if self.cuda:
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
        try:
            with ph("exec_build"):
                model, draw = build_task(torch, task["id"], task["program"], task["dims"], a.device, task["seed"],
                                         task.get("module_mode", "eval"))
        except Exception as e:  # noqa: BLE001
            return _Failure("build_failed", e)
        try:
            with ph("checks"):
                reason, checks = run_checks(torch, model, draw, task, a.cfg["min_informative_fraction"], task["dims"] is None)
                if not reason and task.get("imported"):
                    reason, checks["artifact"] = self.check_artifact(task, model, draw)
        except Exception as e:  # noqa: BLE001
            return _Failure("eager_failed", e)
        probe_ms = None
        if not reason and a.probe_n > 0:  # --probe-n 0: the final timing decides the window alone
            try:
                with self.sampling(ph, "probe_timing"):
                    (st,) = measure(self.timer, [model], draw, warmup=False, n_fixed=a.probe_n)
                probe_ms = st["median_ms"]
            except Exception as e:  # noqa: BLE001
                return _Failure("eager_failed", e)
            lo, hi = a.cfg["window_ms"]
            if not task.get("imported") and (probe_ms < lo / a.probe_margin or probe_ms > hi * a.probe_margin):
                reason = "eager_runtime_window"
        peak = (torch.cuda.max_memory_allocated() - base) if self.cuda else 0
        del model, draw
        with ph("release"):
            release(torch, a.device, compiled=False, base=base)
        return reason, checks, probe_ms, peak

    def check_artifact(self, task, model, draw):
        """An imported task's artifact against the module at its own size (artifact_check.py), where
        --artifact-check asks for it: (reason or "", details)."""
        tier = task.get("trace_tier")
        if not task.get("artifact_check"):
            return "", {"tier": tier or "unknown", "checked": False}
        if self.specs is None:
            self.specs = artifact_check.Specs(self.a.dataset, self.a.specs)
        spec = self.specs.get(task["id"])
        return artifact_check.check(self.torch, model, draw, spec, task, self.a.device, tier)

    def fail_row(self, task, f, t0):
        """Records a failed step (after the step's frame is gone, so its memory can be freed)."""
        ph = task.get("ph") or Phases()
        with ph("release"):
            release(self.torch, self.a.device)
        wall = task.get("probe_s", 0.0) + time.monotonic() - t0
        self.record(task, "rejected:" + f.reason, f.reason, error=f.error, wall_s=round(wall, 3),
                    phase_s=ph.record(wall), traceback=f.tb)
        self.serial_s.append(wall)
        if not cuda_healthy(self.torch, self.a.device):
            self.restart("the CUDA context broke on task %s (%s)" % (task["id"], f.error))
        return False

    def restart(self, why):
        n = int(os.environ.get("KFORGE_SYNTH_GPU_RESTARTS", "0"))
        print(f"synth_gpu: {why}; restarting the process (restart {n + 1})", file=sys.stderr, flush=True)
        if self.pool:
            self.pool.close()
        for w in self.writers.values():
            w.close()
        if n >= self.a.max_restarts:
            print("synth_gpu: error: too many restarts; stopping (rerun to continue)", file=sys.stderr, flush=True)
            sys.exit(3)
        os.environ["KFORGE_SYNTH_GPU_RESTARTS"] = str(n + 1)
        os.execv(sys.executable, [sys.executable] + sys.argv)

    # -- stage 3: compile (warm), compare, time --------------------------------------------------
    def time_task(self, task, cold, worker_s=None):
        ph = task["ph"]
        t0 = time.monotonic()
        claim = self.a.compile_mem_factor * task["peak_mem_bytes"] + (1 << 30)
        for attempt in (0, 1):
            res = self._time_task(task, ph, claim)
            if isinstance(res, _Failure):
                if res.oom and attempt == 0 and self.may_retry_oom():
                    task["oom_retry"] = True
                    self.drain(ph)
                    claim = self.pool.cap
                    continue
                return self.fail_row(task, res, t0)
            break
        status, reason, fields = res
        wall = task["probe_s"] + time.monotonic() - t0
        self.serial_s.append(wall)
        self.time_s.append(wall - task["probe_s"])
        extra = {}
        if worker_s is not None and self.pool:
            extra = {"compile_worker_s": worker_s, "compile_queue_s": task.get("compile_queue_s")}
        self.record(task, status, reason, probe_eager_ms=task["probe_ms"], checks=task["checks"],
                    compile_cold_s=round(cold, 3), peak_mem_gb=round(task["peak_mem_bytes"] / 2**30, 3),
                    wall_s=round(wall, 3), phase_s=ph.record(wall), **extra, **fields)
        return status == "ok"

    def _time_task(self, task, ph, claim):
        """(status, reason, fields) or a _Failure; returns with the task's memory freed."""
        torch, a = self.torch, self.a
        self.admit(claim, ph)
        base = torch.cuda.memory_allocated() if self.cuda else None
        try:
            with ph("exec_build"):
                model, draw = build_task(torch, task["id"], task["program"], task["dims"], a.device, task["seed"],
                                         task.get("module_mode", "eval"))
        except Exception as e:  # noqa: BLE001
            return _Failure("build_failed", e)
        counters = None
        try:
            from torch._dynamo.utils import counters
            hits0 = counters["inductor"]["fxgraph_cache_hit"]
            miss0 = counters["inductor"]["fxgraph_cache_miss"]
        except Exception:
            hits0 = miss0 = 0
        try:
            with ph("compile_warm"):  # warm_s is taken inside the phase, so it never exceeds it (a thread may hold the GIL)
                tc = time.monotonic()
                compiled = torch.compile(model)
                with torch.no_grad():
                    x = draw()
                    out_c = as_outputs(torch, compiled(*x))
                if self.cuda:
                    torch.cuda.synchronize()
                warm_s = time.monotonic() - tc
        except Exception as e:  # noqa: BLE001
            return _Failure("torch_compile_build", e)
        cache = {}
        if counters is not None:
            cache = {"fxgraph_hit": counters["inductor"]["fxgraph_cache_hit"] - hits0,
                     "fxgraph_miss": counters["inductor"]["fxgraph_cache_miss"] - miss0}
        try:
            with ph("checks"):
                with torch.no_grad():
                    out_e = as_outputs(torch, model(*x))
                mism = 0.0
                for e_, c_ in zip(out_e, out_c):
                    if e_.shape != c_.shape or e_.dtype != c_.dtype:
                        mism = 1.0
                    elif e_.is_floating_point():
                        mism = max(mism, failing_fraction(torch, e_, c_, **task["tolerance"]))
                    elif not torch.equal(e_, c_):
                        mism = 1.0
                del out_e, out_c, x
        except Exception as e:  # noqa: BLE001
            return _Failure("eager_failed", e)
        common = dict(compile_warm_s=round(warm_s, 3), compile_cache=cache)
        if mism > 0:
            del model, compiled, draw
            with ph("release"):
                release(torch, a.device, base=base)
            return "rejected:compile_mismatch", "compile_mismatch", dict(compile_mismatch_fraction=mism, **common)
        lo, hi = a.cfg["window_ms"]
        above = None
        try:
            with self.sampling(ph, "timing"):
                st_e, st_c = measure(self.timer, [model, compiled], draw,
                                     abort_above_ms=hi * a.probe_margin if a.probe_n == 0 and not task.get("imported") else None)
        except AboveWindow as e:
            above = e
        except Exception as e:  # noqa: BLE001
            return _Failure("eager_failed", e)
        del model, compiled, draw
        with ph("release"):
            release(torch, a.device, base=base)
        if above is not None:  # no probe ran (--probe-n 0): the warm-up found it far above the window
            return ("rejected:eager_runtime_window", "eager_runtime_window",
                    dict(eager_ms=above.fastest_ms, note=f"stopped after {above.calls} warm-up calls, each above "
                         f"{hi * a.probe_margin:g} ms (the window's top x --probe-margin; --probe-n 0)", **common))
        eager_ms, compile_ms = st_e["median_ms"], st_c["median_ms"]
        ok = task.get("imported", False) or lo <= eager_ms <= hi  # an imported benchmark task is kept whatever its time
        return ("ok" if ok else "rejected:eager_runtime_window", "" if ok else "eager_runtime_window",
                dict(eager_ms=eager_ms, compile_ms=compile_ms, speedup=eager_ms / compile_ms if compile_ms > 0 else None,
                     eager=st_e, compile=st_c, **common))

    # -- the loops -------------------------------------------------------------------------------
