"""The compile pool and the GPU turn. torch.compile runs in worker processes, filling Inductor's
on-disk caches, at full size on the same device; with overlap they compile the next round while
the main process times the current one. The GPU turn (a file lock) keeps every worker's GPU work
out of the main process's timed calls (tools/dataset/SYNTH_GPU.md, "Overlap")."""
import contextlib
import json
import math
import os
import shutil
import sys
import time

from .common import error_line
from .torch_env import apply_flags, build_task, cuda_healthy, is_oom, release

# The GPU turn: one token for the device, a file lock (the kernel drops it when its holder dies,
# so a worker killed by the compile timeout cannot leave it taken). The main process holds it while
# it samples one task (warm-up and timed calls, and the probe's timed calls) and gives it back
# between tasks; a compile worker holds it for its own GPU work (model build and input draw, the
# traced call, Inductor's benchmarks) and gives it back while Inductor compiles (CPU work). So no
# worker kernel runs while a timed call is in flight. `want` (shared) is 1 while the main process
# waits for the turn: workers then keep off (it waits at most for one worker's turn); `sampling`
# (shared) is 1 exactly while the main process samples.

class GpuTurn:
    def __init__(self, path, want, sampling, main, spin=None):
        import fcntl
        self.fcntl = fcntl
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        self.want, self.sampling, self.main, self.spin = want, sampling, main, spin
        self.held = False
        self.wait_s = self.held_s = 0.0
        self._since = 0.0

    def acquire(self):
        """Takes the turn (False: already held by this process)."""
        if self.held:
            return False
        f = self.fcntl
        t0 = time.monotonic()
        if self.main:
            self.want.value = 1
            try:
                while True:
                    try:
                        f.flock(self.fd, f.LOCK_EX | f.LOCK_NB)
                        break
                    except BlockingIOError:
                        # Keep the pool going meanwhile (results, timeouts: a hung worker holding the
                        # turn is killed by the compile timeout, which frees it).
                        self.spin(0.002) if self.spin else time.sleep(0.001)
            finally:
                self.want.value = 0
        else:
            while True:
                while self.want.value:
                    time.sleep(0.001)
                f.flock(self.fd, f.LOCK_EX)
                if not self.want.value:
                    break
                f.flock(self.fd, f.LOCK_UN)  # the main process asked first
        self.held = True
        self._since = time.monotonic()
        self.wait_s += self._since - t0
        return True

    def release(self):
        if self.held:
            self.held = False
            self.held_s += time.monotonic() - self._since
            self.fcntl.flock(self.fd, self.fcntl.LOCK_UN)

    @contextlib.contextmanager
    def hold(self):
        got = self.acquire()
        try:
            yield
        finally:
            if got:
                self.release()

    @contextlib.contextmanager
    def released(self):
        was = self.held
        self.release()
        try:
            yield
        finally:
            if was:
                self.acquire()


class _LockWatch:
    """Test hook (KFORGE_SYNTH_GPU_LOCK_LOG=file): in a compile worker, a thread that checks every
    0.5 ms, while the main process says it samples, that the GPU turn is taken (a non-blocking try
    on a descriptor of its own must fail; if it succeeds while `sampling` is still 1, the main process
    was sampling without the turn)."""

    def __init__(self, path, sampling):
        import fcntl
        import threading
        self.fcntl = fcntl
        self.fd = os.open(path, os.O_RDWR)
        self.sampling = sampling
        self.seen = self.free = 0
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        f = self.fcntl
        while True:
            if self.sampling.value:
                try:
                    f.flock(self.fd, f.LOCK_EX | f.LOCK_NB)
                except BlockingIOError:
                    self.seen += 1
                else:
                    if self.sampling.value:
                        self.seen += 1
                        self.free += 1
                    f.flock(self.fd, f.LOCK_UN)
            time.sleep(0.0005)


def _turn_backend(torch, turn):
    """torch.compile's own default backend (the same object type and config as torch.compile(model)
    makes, so the cache keys are the same) that gives the GPU turn back while Inductor compiles."""
    base = torch._TorchCompileInductorWrapper

    class TurnInductor(base):
        def __call__(self, model_, inputs_):
            with turn.released():
                t0, h0 = time.monotonic(), turn.held_s + turn.wait_s
                try:
                    return base.__call__(self, model_, inputs_)
                finally:  # Inductor's own benchmarks take the turn (below): not compile time
                    self.seconds += time.monotonic() - t0 - (turn.held_s + turn.wait_s - h0)

    b = TurnInductor(None, None, None)
    b.seconds = 0.0
    return b


def _guard_benchmarks(turn):
    """Inductor's GPU work during a compile takes the GPU turn: its benchmarks (Inductor's
    benchmarker: autotuning of kernel configs, pad_mm), and pad_mm's decision for a matmul of
    unaligned shape, which makes full-size random inputs on the device before benchmarking (the turn
    is taken when its on-disk cache has no answer, and given back when the decision returns)."""
    try:
        from torch._inductor.runtime import benchmarking
        b = benchmarking.benchmarker
    except Exception:
        return
    for name in ("benchmark", "benchmark_gpu"):
        fn = getattr(b, name, None)
        if fn is None:
            continue

        def guarded(*args, _fn=fn, **kwargs):
            with turn.hold():
                return _fn(*args, **kwargs)
        setattr(b, name, guarded)
    try:
        from torch._inductor.fx_passes import pad_mm
        should, cached = pad_mm._should_pad, pad_mm.get_cached_should_pad
    except Exception:
        return

    def cached_or_turn(key):
        v = cached(key)
        if v is None:
            turn.acquire()  # a benchmark on the device follows
        return v

    def should_pad(*args, **kwargs):
        was = turn.held
        try:
            return should(*args, **kwargs)
        finally:
            if not was:
                turn.release()
    pad_mm.get_cached_should_pad = cached_or_turn
    pad_mm._should_pad = should_pad


# ----------------------------------------------------------------------------------------------
# The compile pool: torch.compile in worker processes, filling Inductor's on-disk caches (FX graph,
# Triton kernels, autotuning), at full size on the same device. With overlap (the default) they
# compile the next round while this process times the current one; their GPU work waits for the
# GPU turn. Without it (--no-overlap) this process does nothing while they compile.

def _compile_worker(jobs, results, wid, device, lock_path, want, sampling, cpus, log_path):
    if cpus:
        try:
            os.sched_setaffinity(0, cpus)  # before torch: its thread pools size themselves from it
        except OSError:
            pass
    import torch
    apply_flags(torch)
    turn = GpuTurn(lock_path, want, sampling, main=False)
    backend = _turn_backend(torch, turn)
    _guard_benchmarks(turn)
    watch = _LockWatch(lock_path, sampling) if log_path else None
    cuda = device.startswith("cuda")
    results.put(("ready", wid, None))
    while True:
        job = jobs.get()
        if job is None:
            return
        task_id, program, dims, seed, module_mode = job
        t0 = time.monotonic()
        turn.wait_s = turn.held_s = backend.seconds = 0.0
        at_turn = []  # `sampling` when this worker's GPU work starts (test log): always 0
        err = ""
        base = torch.cuda.memory_allocated() if cuda else None
        try:
            with turn.hold():  # model build and one draw: allocations and init kernels
                at_turn.append(sampling.value)
                model, draw = build_task(torch, task_id, program, dims, device, seed, module_mode)
                x = draw()
                if cuda:
                    torch.cuda.synchronize()
            compiled = torch.compile(model, backend=backend)
            with turn.hold(), torch.no_grad():  # Dynamo's trace and the call; Inductor gives it back
                at_turn.append(sampling.value)
                compiled(*x)
                if cuda:
                    torch.cuda.synchronize()
            del model, compiled, x
        except Exception as e:  # noqa: BLE001 - any failure is the task's
            err = error_line(e)
        t1 = time.monotonic()
        release(torch, device, base=None if err else base)
        t2 = time.monotonic()
        info = {"lock_wait": turn.wait_s, "gpu_turn": turn.held_s, "compile": backend.seconds, "release": t2 - t1}
        info["other"] = max(0.0, t2 - t0 - sum(info.values()))
        if watch:
            with open(log_path, "a") as f:
                f.write(json.dumps({"wid": wid, "task": task_id, "sampling_at_turn": at_turn, "watch_seen": watch.seen,
                                    "watch_free_while_sampling": watch.free}) + "\n")
            watch.seen = watch.free = 0
        results.put(("done", wid, (task_id, err, t2 - t0, info)))
        if err and not cuda_healthy(torch, device):
            sys.exit(3)  # a broken CUDA context: the pool starts a fresh worker


class CompilePool:
    """Jobs are dicts: id, program, dims, seed, mem (bytes it may use on the device), alone (run only
    with nothing else running: after an out-of-memory failure), tries, t_submit."""

    def __init__(self, n, device, timeout_s, cpus=None, log_path=None):
        import multiprocessing as mp
        import tempfile
        os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")  # W workers, not W x cores processes
        self.ctx = mp.get_context("spawn")
        self.n, self.device, self.timeout_s, self.cpus, self.log_path = n, device, timeout_s, cpus, log_path
        self.dir = tempfile.mkdtemp(prefix="synth_gpu_")  # one lock per run: two runs on two GPUs do not share it
        self.lock_path = os.path.join(self.dir, "gpu_turn.lock")
        open(self.lock_path, "a").close()
        self.want = self.ctx.RawValue("b", 0)
        self.sampling = self.ctx.RawValue("b", 0)
        self.results = self.ctx.Queue()
        self.workers = {}
        self.pending = []
        self.cap = math.inf       # device bytes the running jobs and the main process's claim may use together
        self.main_claim = 0.0     # device bytes the main process may use meanwhile (overlap)
        self.hold = False         # the main process waits for memory: start no new job (an `alone` one excepted)
        self.t_start = time.monotonic()
        self.busy_s = 0.0         # worker-seconds with a job
        self.acc = {"lock_wait": 0.0, "gpu_turn": 0.0, "compile": 0.0, "release": 0.0, "other": 0.0, "queue": 0.0}
        self.jobs_done = 0
        for wid in range(n):
            self._start(wid)

    def _start(self, wid):
        # A SimpleQueue: put() pickles and writes in the caller's thread. A Queue would do it in a
        # feeder thread of this process, which could take the GIL in the middle of a timed call.
        q = self.ctx.SimpleQueue()
        p = self.ctx.Process(target=_compile_worker, daemon=True,
                             args=(q, self.results, wid, self.device, self.lock_path, self.want, self.sampling,
                                   self.cpus, self.log_path))
        p.start()
        self.workers[wid] = {"p": p, "q": q, "job": None, "t": 0.0, "mem": 0.0}

    def _kill(self, wid):
        w = self.workers[wid]
        if w["p"].is_alive():
            w["p"].kill()
        w["p"].join(timeout=10)
        w.update(job=None, mem=0.0)

    def _restart(self, wid):
        self._kill(wid)
        self._start(wid)

    def submit(self, job):
        job.setdefault("alone", False)
        job.setdefault("tries", 0)
        job.setdefault("t_submit", time.monotonic())
        self.pending.append(job)

    def running(self):
        return sum(1 for w in self.workers.values() if w["job"])

    def in_use(self):
        return sum(w["mem"] for w in self.workers.values() if w["job"])

    def alone_waiting(self):
        return any(j["alone"] for j in self.pending) or any(w["job"] and w["job"]["alone"] for w in self.workers.values())

    def _dispatch(self):
        for wid in list(self.workers):
            w = self.workers[wid]
            if w["job"] or not self.pending:
                continue
            running, in_use = self.running(), self.in_use()
            if any(x["job"] and x["job"]["alone"] for x in self.workers.values()):
                return
            pick = None
            if not self.hold:
                pick = next((j for j in self.pending
                             if not j["alone"] and in_use + j["mem"] + self.main_claim <= self.cap), None)
            if pick is None and running == 0 and self.main_claim == 0:
                # Alone it may use the whole device (while the main process claims nothing).
                pick = next((j for j in self.pending if j["alone"]), None) if self.hold else self.pending[0]
            if pick is None:
                return
            if not w["p"].is_alive():
                self._restart(wid)
                w = self.workers[wid]
            self.pending.remove(pick)
            w["q"].put((pick["id"], pick["program"], pick["dims"], pick["seed"], pick.get("module_mode", "eval")))
            now = time.monotonic()
            pick["t_start"] = now
            w.update(job=pick, t=now, mem=pick["mem"])

    def _finish(self, wid, err, secs, info):
        w = self.workers[wid]
        job = w["job"]
        now = time.monotonic()
        self.busy_s += now - w["t"]
        w.update(job=None, mem=0.0)
        if err and is_oom(err) and job["tries"] == 0 and self.device.startswith("cuda"):
            job.update(tries=1, alone=True)  # out of memory next to other work: once more, alone
            self.pending.insert(0, job)
            return None
        self.jobs_done += 1
        for k, v in (info or {}).items():
            self.acc[k] = self.acc.get(k, 0.0) + v
        self.acc["queue"] += job.get("t_start", now) - job["t_submit"]
        return job, err, secs, info or {}

    def poll(self, timeout=0.0):
        """Starts what fits, collects finished jobs (waiting up to `timeout` s for the first), kills
        those past the compile timeout. Returns [(job, error, seconds, info)]."""
        import queue
        self._dispatch()
        out = []
        end = time.monotonic() + timeout
        while True:
            wait = end - time.monotonic()
            try:
                kind, wid, payload = self.results.get(timeout=wait) if wait > 0 else self.results.get_nowait()
            except queue.Empty:
                break
            except (OSError, EOFError, ValueError):
                break
            w = self.workers.get(wid)
            if kind == "done" and w and w["job"] and payload[0] == w["job"]["id"]:
                out.append(self._finish(wid, payload[1], payload[2], payload[3]))
                end = 0.0  # the rest without waiting
        now = time.monotonic()
        for wid, w in list(self.workers.items()):
            if w["job"] and now - w["t"] > self.timeout_s:
                w["job"]["tries"] = 1  # no second try
                out.append(self._finish(wid, f"timeout: torch.compile took more than {self.timeout_s:g} s", now - w["t"], {}))
                self._restart(wid)
            elif w["job"] and not w["p"].is_alive():
                w["job"]["tries"] = 1
                out.append(self._finish(wid, f"compile worker died (exit code {w['p'].exitcode})", now - w["t"], {}))
                self._restart(wid)
            elif not w["job"] and not w["p"].is_alive():
                self._restart(wid)
        self._dispatch()
        return [r for r in out if r]

    def cancel(self, ids=None):
        """Drops pending jobs and kills running ones (all, or those of `ids`): not recorded, redone by
        the next run."""
        self.pending = [j for j in self.pending if ids is not None and j["id"] not in ids]
        for wid, w in self.workers.items():
            if w["job"] and (ids is None or w["job"]["id"] in ids):
                self.busy_s += time.monotonic() - w["t"]
                self._kill(wid)  # restarted if the pool is used again

    def close(self):
        for w in self.workers.values():
            if w["job"] and w["p"].is_alive():
                w["p"].kill()  # busy compiling: nothing to wait for
            elif w["p"].is_alive():
                try:
                    w["q"].put(None)
                except Exception:
                    pass
        end = time.monotonic() + 10
        for w in self.workers.values():
            w["p"].join(timeout=max(0.1, end - time.monotonic()))
            if w["p"].is_alive():
                w["p"].kill()
                w["p"].join(timeout=5)
        shutil.rmtree(self.dir, ignore_errors=True)

