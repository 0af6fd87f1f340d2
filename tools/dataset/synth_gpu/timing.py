"""The one timing method of the GPU stage: env/judge/timing.cpp's (time_interleaved), in Python, with
its settings from configs/synth.yaml's `baseline_timing` through `kforge tasks export-gpu`.

On CUDA, as env/judge/timing.cpp does it:
  - before every call (warm-up and timed) a fresh get_inputs() draw (the TimedCall's `before`), then
    the L2 flush: a write (fill, not a read-modify-write) of l2_flush_factor x the device's L2 size
    with a byte pattern that varies, then persisting L2 lines reset (cudaCtxResetPersistingL2Cache);
  - warm-up in rounds (one call of each function per round, f0 then f1), synchronised after each
    round, until at least warmup_count rounds and warmup_ms of wall time;
  - timed rounds in batches of up to 8, each call bracketed by its own CUDA events on the current
    stream, the batch read after one synchronisation; the same call order f0, f1 every round;
  - stop before a batch when max_reps rounds were run, or, after min_reps, when budget_ms of wall
    time was spent or every function's relative standard error of the mean is below target_rse.
One difference, kept on purpose (tools/dataset/SYNTH_GPU.md): a batch is cut so as not to pass min_reps,
so a task whose RSE is low at once stops at min_reps calls rather than at the next multiple of 8.
On the CPU (CI): the same loop on perf_counter, without flush and without batches."""
import ctypes
import math
import time

from .common import mean_std, quantile_sorted

BATCH = 8  # rounds per synchronisation, as env/judge/timing.cpp's kBatch


def stats(samples):
    """reward/timing_stats.cpp's TimingStats of the samples (ms), as the records' fields: the same
    mean and standard deviation, the same interpolated median, p10 and p90 (common.py's copies, held
    equal to the C++ by tests/golden/timing_stats.json)."""
    n = len(samples)
    if n == 0:
        return {"n": 0}
    mean, sd = mean_std(samples)
    s = sorted(samples)
    return {"median_ms": quantile_sorted(s, 0.5), "mean_ms": mean, "p10_ms": quantile_sorted(s, 0.1),
            "p90_ms": quantile_sorted(s, 0.9), "min_ms": s[0], "max_ms": s[-1], "n": n,
            "rse": (sd / math.sqrt(n) / mean) if n > 1 and mean > 0 else 0.0}


def _persisting_l2_reset():
    """cudaCtxResetPersistingL2Cache of the CUDA runtime torch loaded (None if it cannot be found)."""
    try:
        with open("/proc/self/maps") as f:
            paths = sorted({ln.split()[-1] for ln in f if "libcudart" in ln and ln.split()[-1].startswith("/")})
        for p in paths:
            fn = getattr(ctypes.CDLL(p), "cudaCtxResetPersistingL2Cache", None)
            if fn is not None:
                fn.restype = ctypes.c_int
                return fn
    except OSError:
        pass
    return None


class Timer:
    """Settings (a dict: warmup_count, warmup_ms, min_reps, max_reps, target_rse, budget_ms,
    l2_flush, l2_flush_factor) and, on CUDA, the flush buffer and the events."""

    def __init__(self, torch, device, settings):
        self.torch = torch
        self.s = dict(settings)
        self.cuda = device.startswith("cuda")
        self.dev = torch.device(device)
        self.flush_bytes = 0
        self.reset_l2 = None
        if self.cuda:
            l2 = int(getattr(torch.cuda.get_device_properties(self.dev), "L2_cache_size", 0)) or (64 << 20)
            if self.s["l2_flush"]:
                self.flush_bytes = int(self.s["l2_flush_factor"] * l2)
                self.flush_buf = torch.empty(self.flush_bytes, dtype=torch.uint8, device=self.dev)
                self.reset_l2 = _persisting_l2_reset()
            self.events = []

    def method(self):
        s = self.s
        loop = (f"env/judge/timing.cpp's loop: fresh get_inputs() before each call; eager and torch.compile (default mode) "
                f"interleaved call by call, eager first; warm-up rounds >= {s['warmup_count']} and >= "
                f"{s['warmup_ms']:g} ms; median of n until rse < {100 * s['target_rse']:g}% (n >= {s['min_reps']}) or "
                f"{s['budget_ms']:g} ms or n = {s['max_reps']}; no_grad, eval, TF32 off")
        if self.cuda:
            if not self.flush_bytes:
                return "cuda-events per call on the current stream; no L2 flush; " + loop
            reset = "persisting L2 reset" if self.reset_l2 else "persisting L2 NOT reset (no libcudart found)"
            return (f"cuda-events per call on the current stream; L2 flushed ({self.flush_bytes >> 20} MiB written, "
                    f"{self.s['l2_flush_factor']:g}x L2) and {reset} before each call; batches of {BATCH}; " + loop)
        return ("CPU MODE (CI only, not a GPU baseline): host perf_counter per call; NO cache flush on the CPU; "
                "at check_dims; " + loop)

    def flush(self, pattern):
        if self.flush_bytes:
            self.flush_buf.fill_(pattern & 0xff)
            if self.reset_l2 is not None:
                self.reset_l2()

    def _event_pairs(self, n):
        torch = self.torch
        while len(self.events) < n:
            self.events.append((torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)))
        return self.events[:n]

    def rounds(self, fns, draw, count, pattern0=0):
        """`count` rounds (one call of each fn per round, in order), each call after a draw and the
        flush; returns the times, [[ms per fn] per round], after one synchronisation (CUDA)."""
        torch = self.torch
        out_ms = []
        with torch.no_grad():
            if not self.cuda:
                for _ in range(count):
                    row = []
                    for fn in fns:
                        x = draw()
                        t0 = time.perf_counter()
                        out = fn(*x)
                        row.append((time.perf_counter() - t0) * 1e3)
                        del out, x
                    out_ms.append(row)
                return out_ms
            ev = self._event_pairs(count * len(fns))
            for i in range(count):
                for j, fn in enumerate(fns):
                    x = draw()
                    self.flush(pattern0 + i)
                    start, end = ev[i * len(fns) + j]
                    start.record()
                    out = fn(*x)
                    end.record()
                    del out, x
            torch.cuda.current_stream().synchronize()
            for i in range(count):
                out_ms.append([ev[i * len(fns) + j][0].elapsed_time(ev[i * len(fns) + j][1]) for j in range(len(fns))])
        return out_ms


class AboveWindow(Exception):
    """measure() stopped a task whose first warm-up calls were all slower than abort_above_ms."""

    def __init__(self, fastest_ms, calls):
        super().__init__(f"{calls} warm-up calls, the fastest {fastest_ms:.3f} ms")
        self.fastest_ms, self.calls = fastest_ms, calls


def _done(samples, rounds, s, t0):
    """env/judge/timing.cpp's done(): max_reps, then min_reps, then the budget, then every RSE."""
    n = len(samples[0])
    if rounds >= s["max_reps"]:
        return True
    if n < s["min_reps"]:
        return False
    if (time.monotonic() - t0) * 1e3 > s["budget_ms"]:
        return True
    return all(stats(x)["rse"] < s["target_rse"] for x in samples)


def measure(timer, fns, draw, warmup=True, n_fixed=None, abort_above_ms=None):
    """Times each fn in fns with fresh inputs per call, interleaved (timer's settings). Returns one
    stats dict per fn. n_fixed: exactly that many rounds, no warm-up stop rule (the probe). With
    abort_above_ms, raises AboveWindow once two warm-up calls of fns[0] both took longer (a task
    far above the window, found without a separate probe: --probe-n 0)."""
    s = timer.s
    if warmup:
        k, fastest, t_warm = 0, math.inf, time.monotonic()
        while k < s["warmup_count"] or (time.monotonic() - t_warm) * 1e3 < s["warmup_ms"]:
            (row,) = timer.rounds(fns, draw, 1, pattern0=k)
            k += 1
            fastest = min(fastest, row[0])
            if abort_above_ms is not None and k >= 2 and fastest > abort_above_ms:
                raise AboveWindow(fastest, k)
    samples = [[] for _ in fns]
    rounds, t0 = 0, time.monotonic()
    while True:
        if n_fixed is not None:
            if rounds >= n_fixed:
                break
        elif _done(samples, rounds, s, t0):
            break
        want = (n_fixed if n_fixed is not None else s["max_reps"]) - rounds
        if n_fixed is None and rounds < s["min_reps"]:
            want = min(want, s["min_reps"] - rounds)  # the one difference from env/judge/timing.cpp (above)
        batch = min(BATCH if timer.cuda else 1, want)
        for row in timer.rounds(fns, draw, batch, pattern0=rounds):
            for j, ms in enumerate(row):
                samples[j].append(ms)
        rounds += batch
    return [stats(x) for x in samples]
