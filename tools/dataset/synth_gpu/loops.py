"""The order of a run's work: probe, compile and time in rounds, one after the other
(--no-overlap) or overlapping (the workers compile round k+1 while this process times round k).
A mixin of Run (run.py), which holds the state."""
import math
import os
import sys
import time

from .common import error_line
from .pool import CompilePool, GpuTurn
from .records import PartWriter


def cpu_text(cpus):
    return ",".join(map(str, cpus)) if cpus else "all"


class Loops:
    def go(self, tasks, resumed):
        import gc
        a = self.a
        self.total, self.resumed = len(tasks), resumed
        self.go_t0 = time.monotonic()
        if a.workers > 0 and tasks:
            self.pool = CompilePool(a.workers, a.device, a.compile_timeout_s, cpus=self.worker_cpus,
                                    log_path=os.environ.get("KFORGE_SYNTH_GPU_LOCK_LOG"))
            self.turn = GpuTurn(self.pool.lock_path, self.pool.want, self.pool.sampling, main=True, spin=self.pump)
        if self.main_cpus:
            try:
                os.sched_setaffinity(0, self.main_cpus)  # the workers were started first: they pin themselves
                if self.cuda:
                    self.torch.set_num_threads(len(self.main_cpus))
            except OSError as e:
                print(f"synth_gpu: cannot pin this process to CPUs {cpu_text(self.main_cpus)} ({error_line(e)})",
                      file=sys.stderr, flush=True)
        for k in sorted({t["shard"] for t in tasks}):  # cut a torn last line before anything else
            self.writers[k] = PartWriter(os.path.join(a.out, f"part-{k}.jsonl"))
        gc.collect()
        gc.freeze()  # what is alive now (torch, Inductor, ...) is never garbage: keep it out of every pass
        stopped = ""
        try:
            stopped = self.go_overlap(tasks) if self.overlap and self.pool else self.go_rounds(tasks)
        finally:
            if self.pool:
                self.pool.close()
            if getattr(self, "specs", None):
                self.specs.close()
            for w in self.writers.values():
                w.close()
        self.progress(force=True)
        print(self.time_report(), file=sys.stderr, flush=True)
        left = self.total - self.written
        paths = ', '.join(w.path for w in self.writers.values()) or '-'
        print(f"synth_gpu: shard {a.shard}: wrote {self.written} row(s) to {paths} (ok {self.ok}, rejected "
              f"{sum(self.rejected.values())}); {left} of this run's tasks left"
              + (f" (stopped: {stopped}; rerun the same command to continue)" if left else ""), flush=True)
        return 0

    def round_line(self, k, text, mark):
        """One line per round: where its time went, the compile workers' share since the last line."""
        p = self.pool
        s = f"synth_gpu: round {k}: {text}"
        if p:
            now = time.monotonic()
            busy = p.busy_s + sum(now - w["t"] for w in p.workers.values() if w["job"])
            acc = dict(p.acc)
            cap = max(1e-9, p.n * (now - mark["t"]))
            d = {key: acc.get(key, 0.0) - mark["acc"].get(key, 0.0) for key in ("compile", "gpu_turn", "lock_wait")}
            s += (f"; compile workers busy {100 * (busy - mark['busy']) / cap:.0f} % (finished jobs: compiling "
                  f"{d['compile']:.1f} s, GPU turns {d['gpu_turn']:.1f} s, waiting for the turn {d['lock_wait']:.1f} s)")
            mark.update(t=now, busy=busy, acc=acc)
        print(s, file=sys.stderr, flush=True)

    def go_rounds(self, tasks):
        """--no-overlap (or no workers): probe a round, compile it (this process idle), time it."""
        a = self.a
        stopped = ""
        mark = {"t": time.monotonic(), "busy": 0.0, "acc": {}}
        i = k = 0
        while i < len(tasks):
            room = (self.left() - self.reserve_s()) / self.est_task_s()
            fit = int(room) if math.isfinite(room) else len(tasks)
            if fit < 1:
                stopped = "time budget"
                break
            batch = tasks[i:i + min(a.batch, fit)]
            i += len(batch)
            t_probe = time.monotonic()
            passed = []
            for t in batch:  # stage 1
                if self.left() < self.reserve_s():
                    stopped = "time budget"
                    break
                if self.probe(t):
                    passed.append(t)
                self.maybe_freeze()
            t_comp = time.monotonic()
            if self.pool and passed:  # stage 2
                serial_est = (sum(self.serial_s) / len(self.serial_s) if self.serial_s else 4.0) * len(passed)
                hard = time.monotonic() + self.left() - self.reserve_s() - serial_est
                self.pool.cap = (0.8 * self.mem_total - self.torch.cuda.memory_reserved()) if self.cuda else math.inf
                self.pool.main_claim = 0.0
                for t in passed:
                    self.submit(t)
                while any(t["id"] in self.inflight for t in passed):
                    if time.monotonic() > hard:
                        self.pool.cancel()
                        self.inflight.clear()
                        stopped = "time budget (during compilation)"
                        break
                    self.pump(0.5)
            elif passed:
                for t in passed:
                    self.compiled[t["id"]] = (0.0, None)
            t_time = time.monotonic()
            self.waits["compile"] += t_time - t_comp
            n_timed = 0
            for t in passed:  # stage 3
                if t["id"] not in self.compiled:
                    continue
                if self.left() < self.reserve_s() / 2:
                    stopped = "time budget"
                    break
                cold, info = self.compiled.pop(t["id"])
                self.time_task(t, cold, info)
                n_timed += 1
                self.maybe_freeze()
            k += 1
            self.round_line(k, f"{len(batch)} probed ({len(passed)} passed) in {t_comp - t_probe:.1f} s; compiled in "
                               f"{t_time - t_comp:.1f} s (this process idle); {n_timed} timed in "
                               f"{time.monotonic() - t_time:.1f} s", mark)
            if stopped:
                break
        self.compiled.clear()
        return stopped

    def go_overlap(self, tasks):
        """Overlap: probe round k (each task that passes goes to the pool at once), then time round
        k-1 while the workers compile round k; a compile's GPU work waits for the GPU turn."""
        a, pool = self.a, self.pool
        pool.cap = (0.8 * self.mem_total - self.main_base) if self.cuda else math.inf
        stopped = ""
        mark = {"t": time.monotonic(), "busy": 0.0, "acc": {}}
        prev, i, k = [], 0, 0
        try:
            while True:
                cur = []
                n_probed = 0
                t_probe = time.monotonic()
                if i < len(tasks) and not stopped:
                    room = (self.left() - self.reserve_s() - len(prev) * self.est_time_s()) / (self.est_probe_s() + self.est_time_s())
                    fit = int(room) if math.isfinite(room) else len(tasks)
                    if fit < 1:
                        stopped = "time budget"
                    else:
                        batch = tasks[i:i + min(a.batch, fit)]
                        i += len(batch)
                        for t in batch:
                            self.pump()
                            if self.left() < self.reserve_s():
                                stopped = "time budget"
                                break
                            n_probed += 1
                            if self.probe(t):
                                cur.append(t)
                                self.submit(t)
                            self.maybe_freeze()
                t_time = time.monotonic()
                w0 = self.waits["compile"]
                n_timed, stop2 = self.time_round(prev)
                k += 1
                self.round_line(k, f"{n_probed} probed ({len(cur)} passed) in {t_time - t_probe:.1f} s; the previous round's "
                                   f"{n_timed} timed in {time.monotonic() - t_time:.1f} s, of which {self.waits['compile'] - w0:.1f} s "
                                   f"waiting for compiles", mark)
                if stop2:
                    stopped = stopped or stop2
                    break
                prev = cur
                if not prev and (stopped or i >= len(tasks)):
                    break
        finally:
            pool.cancel()  # what is left is redone by the next run
            self.inflight.clear()
            self.compiled.clear()
        return stopped

    def time_round(self, ts):
        """Times the tasks of `ts` as their compiles finish (the first finished first). Returns
        (number timed, why it stopped or "")."""
        left = list(ts)
        n = 0
        while left:
            self.pump()
            done = [t for t in left if t["id"] not in self.inflight]
            if not done:
                if self.left() < self.reserve_s() / 2:
                    return n, "time budget (waiting for compilation)"
                w = time.monotonic()
                self.pool.main_claim = 0.0  # idle: a job that needs the device alone may start
                self.pump(0.1)
                self.waits["compile"] += time.monotonic() - w
                continue
            t = min(done, key=lambda x: x.get("compiled_at", 0.0))
            left.remove(t)
            if t["id"] not in self.compiled:
                continue  # rejected by its compile (recorded) or cancelled
            if self.left() < self.reserve_s() / 2:
                return n, "time budget"
            cold, info = self.compiled.pop(t["id"])
            self.time_task(t, cold, info)
            n += 1
            self.maybe_freeze()
        return n, ""

