#!/usr/bin/env python3
"""The GPU stage of the synthesizer (issue 7): runs every task of a `kforge synth` dataset on the
device, applies the filters the CPU stages could not, and measures the eager and torch.compile
baselines with one timing method. Resumable by row; shardable; one JSON line per task.

    python tools/synth_gpu.py DIR/dataset.h5 --shard k/N [--ids FILE] [--device cuda] [--out DIR/gpu]
           [--limit N] [--time-budget-s S] [--workers W]
    python tools/synth_gpu.py --merge DIR/dataset.h5 [--out DIR/gpu]

Measuring (tools/SYNTH_GPU.md has the whole story and the H200 commands):
  per task, Model(*get_init_inputs()) and get_inputs() are built on the device (the rendered program
  already gives the task dtype), eval(), under torch.no_grad(), TF32 off for matmul and cuDNN;
  1. probe (serial): eager runs, runs twice bitwise alike, varies with a second draw, finite, clear
     of the tolerance floor and of a constant answer, at the task's full dims (the CPU filters only
     ran the C++ reference at the small check dims); a short probe of the eager time rejects tasks
     far outside the window before anything is compiled (--probe-n 0: no probe);
  2. compile (parallel): torch.compile(model) in worker processes, which fills Inductor's on-disk
     caches; a failure or a timeout rejects the task (torch_compile_build);
  3. time (serial, one task at a time on the GPU): torch.compile(model) again in this process (warm
     cache), its output checked against eager with the task tolerance (compile_mismatch), then eager
     and compiled timed call by call, interleaved: CUDA events around each call, the L2 flushed
     before every call by a read-modify-write of a buffer of at least 2x L2, fresh get_inputs() draw
     for every call, warm-up by count and by time, median of n with a relative-standard-error stop;
     a task whose eager median is outside the config's window is rejected (eager_runtime_window).
  With overlap (the default; --no-overlap for one stage after the other) the workers compile round
  k+1 while this process times round k: a worker's GPU work waits for the GPU turn (a file lock this
  process holds while it samples a task), this process runs on CPUs of its own (--reserved-cores),
  and both count against one memory cap. Every record says where its serial seconds went (phase_s).
  With --device cpu (CI) the same code runs at the check dims, host clock, no cache flush: the
  records say so in their method and merge refuses them unless --allow-cpu.
"""
import argparse
import contextlib
import datetime
import glob
import json
import math
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools", "bench"))
import results_doc  # noqa: E402
TOOL = "tools/synth_gpu.py 1"
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
]
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


# ----------------------------------------------------------------------------------------------
# Inputs: the dataset, the shard, the config.

def read_dataset(path, columns):
    """Returns (attrs, {column: list}) for a kforge dataset; InputError naming the file otherwise."""
    import h5py
    if not os.path.exists(path):
        raise InputError(f"{path}: no such file")
    if os.path.isdir(path):
        raise InputError(f"{path}: is a directory, not a dataset.h5")
    if not h5py.is_hdf5(path):
        raise InputError(f"{path}: not an HDF5 file")
    try:
        with h5py.File(path, "r") as f:
            attrs = {k: (v.decode() if isinstance(v, bytes) else str(v)) for k, v in f.attrs.items()}
            if attrs.get("format") != "kforge-dataset":
                raise InputError(f"{path}: not a kforge dataset (format attribute missing)")
            if attrs.get("format_version") != "1":
                raise InputError(f"{path}: dataset format version {attrs.get('format_version')} (this tool reads 1)")
            if "tasks" not in f:
                raise InputError(f"{path}: not a kforge dataset (no /tasks)")
            out = {}
            for c in columns:
                if c not in f["tasks"]:
                    raise InputError(f"{path}: not a kforge dataset (no /tasks/{c})")
                ds = f["tasks"][c]
                out[c] = list(ds.asstr()[:]) if h5py.check_string_dtype(ds.dtype) else ds[:].tolist()
            n = {len(v) for v in out.values()}
            if len(n) > 1:
                raise InputError(f"{path}: /tasks columns have different lengths")
            return attrs, out
    except OSError as e:
        raise InputError(f"{path}: cannot read ({error_line(e)})")


def parse_shard(text):
    """k/N -> ([k], N); all/N -> ([0..N-1], N): every shard in order, each into its own part file."""
    m = re.fullmatch(r"(\d+|all)/(\d+)", text or "")
    if not m or int(m.group(2)) < 1 or (m.group(1) != "all" and int(m.group(1)) >= int(m.group(2))):
        raise InputError(f"--shard is k/N with 0 <= k < N, or all/N, not '{text}'")
    n = int(m.group(2))
    return (list(range(n)) if m.group(1) == "all" else [int(m.group(1))]), n


def shard_rows(n_rows, k, n):
    """Shard k of n: a contiguous block of rows (sizes differ by at most one)."""
    return range(k * n_rows // n, (k + 1) * n_rows // n)


def load_config(path):
    import yaml
    try:
        with open(path) as f:
            cfg = yaml.safe_load(f) or {}
    except OSError as e:
        raise InputError(f"{path}: cannot read the config ({error_line(e)})")
    except yaml.YAMLError as e:
        raise InputError(f"{path}: not valid YAML ({error_line(e)})")
    if not isinstance(cfg, dict):
        raise InputError(f"{path}: the config is not a mapping")
    try:
        lo = float(cfg.get("window_ms_low", 1))
        hi = float(cfg.get("window_ms_high", 100))
        frac = float((cfg.get("cpu_check") or {}).get("min_informative_fraction", 0.01))
    except (TypeError, ValueError) as e:
        raise InputError(f"{path}: window_ms_low, window_ms_high and cpu_check.min_informative_fraction are numbers ({e})")
    if not (0 <= lo < hi):
        raise InputError(f"{path}: window_ms_low must be >= 0 and below window_ms_high")
    return {"window_ms": [lo, hi], "min_informative_fraction": frac}


def spec_info(spec_yaml):
    """What the GPU stage needs from a task spec: seed, dims, check_dims, outputs, tolerance."""
    import yaml
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    s = yaml.load(spec_yaml, Loader=loader)
    tol = s.get("tolerance") or {}
    dtype = s.get("dtype", "float32")
    default_tol = 1e-4 if dtype == "float32" else 1e-2
    return {
        "seed": int(s.get("seed", 0)),
        "dims": s.get("dims") or {},
        "check_dims": s.get("check_dims"),
        "outputs": s.get("outputs") or [],
        "atol": float(tol.get("atol", default_tol)),
        "rtol": float(tol.get("rtol", default_tol)),
        "dtype": dtype,
    }


# ----------------------------------------------------------------------------------------------
# The part files: one JSON line per task, flushed per row; a killed run resumes.

def part_files(out_dir):
    return sorted(glob.glob(os.path.join(out_dir, "part-*.jsonl")))


def read_records(out_dir):
    """Every complete record in every part file, in file order (a torn last line is ignored)."""
    recs = []
    for p in part_files(out_dir):
        with open(p) as f:
            for line in f:
                if not line.endswith("\n"):
                    break
                try:
                    r = json.loads(line)
                except ValueError:
                    continue
                if isinstance(r, dict) and "id" in r and "status" in r:
                    recs.append(r)
    return recs


class PartWriter:
    def __init__(self, path):
        self.path = path
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        # A run killed mid-write leaves a torn last line: cut it off before appending.
        if os.path.exists(path):
            with open(path, "rb+") as f:
                data = f.read()
                if data and not data.endswith(b"\n"):
                    f.truncate(data.rfind(b"\n") + 1)
        self.f = open(path, "a")

    def write(self, rec):
        self.f.write(json.dumps(rec, allow_nan=False) + "\n")
        self.f.flush()
        os.fsync(self.f.fileno())

    def close(self):
        self.f.close()


# ----------------------------------------------------------------------------------------------
# Torch side. Everything below imports torch lazily so that --merge and errors stay fast.

def apply_flags(torch):
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    torch.backends.cudnn.benchmark = False


def flags_record(torch):
    return {
        "allow_tf32_cublas": str(torch.backends.cuda.matmul.allow_tf32).lower(),
        "allow_tf32_cudnn": str(torch.backends.cudnn.allow_tf32).lower(),
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "cudnn_benchmark": str(torch.backends.cudnn.benchmark).lower(),
        "grad_mode": "no_grad",
        "module_mode": "eval",
        "compile_mode": "default",
    }


def environment(torch, device):
    env = {"torch": torch.__version__, "cuda": torch.version.cuda or "", "python": platform.python_version(),
           "host": socket.gethostname(), "device": device}
    try:
        import triton
        env["triton"] = triton.__version__
    except Exception:
        env["triton"] = ""
    if device.startswith("cuda"):
        props = torch.cuda.get_device_properties(torch.device(device))
        env["gpu"] = props.name
        env["l2_bytes"] = int(getattr(props, "L2_cache_size", 0))
        env["sm_count"] = props.multi_processor_count
        env["memory_gb"] = round(props.total_memory / 2**30, 1)
        env["cudnn"] = str(torch.backends.cudnn.version())
        try:
            idx = torch.device(device).index or 0
            out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=30).stdout.strip().splitlines()
            env["driver"] = out[min(idx, len(out) - 1)].strip() if out else ""
        except (OSError, subprocess.SubprocessError):
            env["driver"] = ""
    else:
        cpu = platform.processor() or platform.machine()
        try:
            with open("/proc/cpuinfo") as f:
                m = re.search(r"model name\s*:\s*(.*)", f.read())
                cpu = m.group(1).strip() if m else cpu
        except OSError:
            pass
        env["gpu"] = f"none (cpu: {cpu})"
        env["driver"] = ""
        env["threads"] = torch.get_num_threads()
    return env


def build_task(torch, task_id, program, dims, device, seed):
    """exec the rendered program; Model and a draw() of fresh inputs on the device."""
    ns = {"__name__": "kforge_task_" + task_id}
    exec(compile(program, f"<kforge task {task_id}>", "exec"), ns)
    for k, v in (dims or {}).items():  # the check dims replace the module-level dims (CPU mode)
        if k in ns:
            ns[k] = int(v)
    torch.manual_seed(seed % (2**63))
    dev = torch.device(device)
    with dev:
        model = ns["Model"](*ns["get_init_inputs"]())
    model = model.to(dev).eval()

    def draw():
        with dev:
            xs = ns["get_inputs"]()
        return [x.to(dev) if torch.is_tensor(x) else x for x in xs]

    return model, draw


def as_outputs(torch, out):
    if torch.is_tensor(out):
        return [out]
    if isinstance(out, (list, tuple)):
        return [o for o in out if torch.is_tensor(o)]
    return []


CHUNK = 1 << 26  # elements per chunk of the tolerance tests (bounds the float64 temporaries to ~2 GB)


def failing_fraction(torch, ref, answer, atol, rtol):
    """Share of elements where `answer` fails the tolerance test against `ref` (as the C++ filters
    and the verifier: |a - r| > atol + rtol * |r|, in double). On a GPU one fused pass (FUSED,
    below); else chunked to bound memory, the count on the device until the end (one host sync)."""
    r = ref.reshape(-1)
    a = answer.reshape(-1) if answer.numel() == ref.numel() else answer.expand_as(ref).reshape(-1)
    n = r.numel()
    if n == 0:
        return 0.0
    if FUSED.usable(torch, r, a):
        return FUSED.counts(torch, r, a, None, atol, rtol)[0] / n
    return failing_fraction_eager(torch, r, a, atol, rtol) / n


def failing_fraction_eager(torch, r, a, atol, rtol):
    """The failing count of two flat tensors of one size, with torch operations, chunked."""
    n = r.numel()
    bad = torch.zeros((), dtype=torch.int64, device=r.device)
    for i in range(0, n, CHUNK):
        rr = r[i:i + CHUNK].double()
        thr = rr.abs().mul_(rtol).add_(atol)  # atol + rtol * |r|, the same double operations
        bad += (torch.sub(a[i:i + CHUNK].double(), rr).abs_() > thr).sum()  # never in place on the caller's tensors
    return int(bad.item())


def informative_fractions(torch, x, y, atol, rtol):
    """The three fractions of the informative checks of one floating-point output x, in one pass
    over x with the counts kept on the device (one host sync), each exactly as failing_fraction
    computes it: vary = failing_fraction(x, y); zeros_fail = failing_fraction(x, 0) (|0 - r| is
    |r|); constant_fail = failing_fraction(x, mean(x) in double) (1.0 for a single element)."""
    r = x.reshape(-1)
    b = y.reshape(-1) if y.numel() == x.numel() else y.expand_as(x).reshape(-1)
    n = r.numel()
    if n == 0:
        return 0.0, 0.0, 1.0
    c = torch.mean(x, dtype=torch.float64) if n > 1 else None  # a 0-d tensor: no .item() round trip
    if FUSED.usable(torch, r, b):
        v, z, k = FUSED.counts(torch, r, b, c, atol, rtol)
    else:
        v, z, k = informative_counts_eager(torch, r, b, c, atol, rtol)
    return v / n, z / n, (k / n if c is not None else 1.0)


def informative_counts_eager(torch, r, b, c, atol, rtol):
    """(vary, zeros, constant) failing counts with torch operations, chunked (bounds the float64
    temporaries to ~2 GB); constant is 0 when c is None."""
    n = r.numel()
    bad = torch.zeros(3, dtype=torch.int64, device=r.device)
    for i in range(0, n, CHUNK):
        rr = r[i:i + CHUNK].double()
        ab = rr.abs()
        thr = ab.mul(rtol).add_(atol)
        bad[1] += (ab > thr).sum()
        buf = ab  # reused for |y - x| and |c - x| (the same double values as .double() and sub)
        buf.copy_(b[i:i + CHUNK]).sub_(rr).abs_()
        bad[0] += (buf > thr).sum()
        if c is not None:
            torch.sub(c, rr, out=buf).abs_()
            bad[2] += (buf > thr).sum()
        del rr, ab, buf, thr
    v, z, k = bad.tolist()
    return v, z, k


class FusedCounts:
    """The three failing counts of the checks in one Triton kernel: each element of x and y read
    once (the torch operations above make about 25 passes over float64 copies, which made the
    checks a fifth of the GPU stage's time on the H200). The same IEEE double operations in the same
    order, FMA contraction off (enable_fp_fusion=False: rtol * |r| is rounded before atol is added,
    as in two torch kernels), NaN comparing false; so the counts are the torch ones exactly. Before
    its first use on a device it proves that on a set of hard cases against the torch code (float32,
    bfloat16, float16 and float64; NaN, inf, values on the tolerance edge, sizes off the block); a
    failure, or a kernel that does not build, turns it off for the run with one line on stderr.
    --no-fused-checks turns it off. TRITON_INTERPRET=1 runs the same kernel on the CPU (the tests)."""

    BLOCK = 2048

    def __init__(self):
        self.enabled = True
        self.state = {}  # device -> "ok" | "off: why"
        self.kernel = None
        self.last = None  # the compiled kernel of the last launch (its PTX: tests)
        self.interpret = os.environ.get("TRITON_INTERPRET") == "1"

    def usable(self, torch, r, b):
        if not self.enabled or not (r.is_floating_point() and b.is_floating_point()) or r.numel() != b.numel():
            return False
        if r.device != b.device or (r.device.type != "cuda" and not self.interpret):
            return False
        key = str(r.device)
        if key not in self.state:
            self.state[key] = self.selfcheck(torch, r.device)
            if self.state[key] != "ok":
                print(f"synth_gpu: fused checks {self.state[key]}; using the torch operations", file=sys.stderr, flush=True)
        return self.state[key] == "ok"

    def describe(self):
        if not self.enabled:
            return "torch operations (--no-fused-checks)"
        if not self.state:
            return "torch operations (the fused kernel was not used: no output checked on a GPU)"
        return "; ".join(f"{d}: " + ("fused Triton kernel, self-checked" if v == "ok" else f"torch operations ({v})")
                         for d, v in sorted(self.state.items()))

    def _build(self):
        import triton
        import triton.language as tl

        @triton.jit(do_not_specialize=["n"])  # one build per dtype pair, whatever the size
        def counts_kernel(x_ptr, y_ptr, p_ptr, out_ptr, n, HAS_C: tl.constexpr, BLOCK: tl.constexpr):
            offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
            m = offs < n
            r = tl.load(x_ptr + offs, mask=m, other=0.0).to(tl.float64)
            b = tl.load(y_ptr + offs, mask=m, other=0.0).to(tl.float64)
            atol = tl.load(p_ptr)
            rtol = tl.load(p_ptr + 1)
            ab = tl.abs(r)
            thr = ab * rtol + atol
            tl.atomic_add(out_ptr, tl.sum(((tl.abs(b - r) > thr) & m).to(tl.int32), axis=0).to(tl.int64))
            tl.atomic_add(out_ptr + 1, tl.sum(((ab > thr) & m).to(tl.int32), axis=0).to(tl.int64))
            if HAS_C:
                c = tl.load(p_ptr + 2)
                tl.atomic_add(out_ptr + 2, tl.sum(((tl.abs(c - r) > thr) & m).to(tl.int32), axis=0).to(tl.int64))

        self.kernel = counts_kernel
        self.cdiv = triton.cdiv

    def counts(self, torch, r, b, c, atol, rtol):
        """(vary, zeros, constant) counts of flat tensors r (the reference) and b; constant is 0
        when c (a 0-d float64 tensor) is None. One host sync."""
        if self.kernel is None:
            self._build()
        r, b = r.contiguous(), b.contiguous()
        p = torch.empty(3, dtype=torch.float64, device=r.device)
        p[0], p[1] = float(atol), float(rtol)
        if c is not None:
            p[2:3].copy_(c.reshape(1))
        out = torch.zeros(3, dtype=torch.int64, device=r.device)
        n = r.numel()
        self.last = self.kernel[(self.cdiv(n, self.BLOCK),)](r, b, p, out, n, HAS_C=c is not None, BLOCK=self.BLOCK,
                                                             num_warps=8, enable_fp_fusion=False)
        v, z, k = out.tolist()
        return v, z, k

    def selfcheck(self, torch, device):
        """"ok", or "off: why" when the kernel does not build or any count differs from torch's."""
        try:
            if self.kernel is None:
                self._build()
            g = torch.Generator(device="cpu").manual_seed(20261130)
            for dtype in (torch.float32, torch.bfloat16, torch.float16, torch.float64):
                for n in (1, 7, self.BLOCK, 3 * self.BLOCK + 5, 100003):
                    x = (torch.randn(n, generator=g, dtype=torch.float64) * 3).to(dtype)
                    y = (x.double() + torch.randn(n, generator=g, dtype=torch.float64) * 1e-3).to(dtype)
                    if n > 10:
                        x[3], x[4], x[5], y[6] = float("nan"), float("inf"), float("-inf"), float("nan")
                        x[7] = 0
                    for atol, rtol in ((1e-4, 1e-4), (1e-2, 1e-2), (0.0, 0.0), (0.5, 0.0)):
                        # values exactly on the edge in double: |y - x| == atol + rtol * |x|
                        xd = x.double()
                        edge = xd + (xd.abs() * rtol + atol)
                        for yy in (y, edge.to(dtype), x, torch.zeros_like(x)):  # float64: the edge exactly
                            xr, yr = x.to(device), yy.to(device)
                            c = torch.mean(xr, dtype=torch.float64) if n > 1 else None
                            want = informative_counts_eager(torch, xr, yr, c, atol, rtol)
                            got = self.counts(torch, xr, yr, c, atol, rtol)
                            if tuple(got) != tuple(want):
                                return (f"off: the kernel's counts {tuple(got)} differ from torch's {tuple(want)} "
                                        f"({str(dtype).replace('torch.', '')}/{str(yy.dtype).replace('torch.', '')}, "
                                        f"n {n}, atol {atol:g}, rtol {rtol:g})")
            return "ok"
        except Exception as e:  # noqa: BLE001 - no Triton, no build, no launch: the torch path
            return f"off: {error_line(e)}"


FUSED = FusedCounts()


def run_checks(torch, model, draw, info, cfg, full_dims):
    """The output checks at the dims in effect. Returns (reason or "", details)."""
    atol, rtol = info["atol"], info["rtol"]
    frac_min = cfg["min_informative_fraction"]
    with torch.no_grad():
        xa = draw()
        a1 = as_outputs(torch, model(*xa))
        a2 = as_outputs(torch, model(*xa))
        del xa
        xb = draw()
        b = as_outputs(torch, model(*xb))
        del xb
    d = {"outputs": [[list(o.shape), str(o.dtype).replace("torch.", "")] for o in a1]}
    if full_dims and info["outputs"]:
        want = [[list(o.get("shape", [])), o.get("dtype")] for o in info["outputs"]]
        if want != d["outputs"]:
            d["spec_outputs"] = want
            return "spec_mismatch", d
    if not a1:
        return "eager_failed", dict(d, error="the model returned no tensor")
    for x, y in zip(a1, a2):
        if not torch.equal(x, y) and not (x.is_floating_point() and torch.equal(torch.isnan(x), torch.isnan(y))
                                          and torch.equal(x.nan_to_num(0), y.nan_to_num(0))):
            if x.is_floating_point():
                d["max_abs_diff_same_inputs"] = float((x.double() - y.double()).abs().max().item())
            return "nondeterministic_gpu", d
    del a2
    varies = False
    informative = []
    for x, y in zip(a1, b):
        if not x.is_floating_point():
            varies = varies or not torch.equal(x, y)
            continue
        if not bool(torch.isfinite(x).all()) or not bool(torch.isfinite(y).all()):
            return "nonfinite_gpu", d
        f_vary, f_zero, f_const = informative_fractions(torch, x, y, atol, rtol)
        varies = varies or f_vary > 0
        informative.append({"vary": round(f_vary, 6), "zeros_fail": round(f_zero, 6), "constant_fail": round(f_const, 6)})
        d["informative"] = informative
        if f_zero < frac_min:
            return "below_tolerance_floor_gpu", d
        if f_const < frac_min:
            return "near_constant_gpu", d
    if not varies:
        return "invariant_to_inputs_gpu", d
    return "", d


class Timer:
    """One timing method for eager and compiled: time(fn, args) -> (ms, output)."""

    def __init__(self, torch, device):
        self.torch = torch
        self.cuda = device.startswith("cuda")
        self.dev = torch.device(device)
        if self.cuda:
            l2 = int(getattr(torch.cuda.get_device_properties(self.dev), "L2_cache_size", 0)) or (64 << 20)
            self.flush_bytes = max(2 * l2, 128 << 20)
            self.flush = torch.randint(0, 256, (self.flush_bytes,), dtype=torch.uint8, device=self.dev)
            self.start = torch.cuda.Event(enable_timing=True)
            self.end = torch.cuda.Event(enable_timing=True)
        else:
            self.flush_bytes = 0

    def method(self, a):
        both = (f"eager and torch.compile (default mode) interleaved call by call, fresh get_inputs() before each call; "
                f"warm-up >= {a.warmup_calls} calls and >= {a.warmup_ms:g} ms; median of n in [{a.min_n}, {a.max_n}], "
                f"stop at RSE <= {a.rse:g} (or {a.max_task_s:g} s); no_grad, eval, TF32 off")
        if self.cuda:
            return f"CUDA events per call; L2 flushed before each call (RMW of {self.flush_bytes >> 20} MiB >= 2x L2); " + both
        return ("CPU MODE (CI only, not a GPU baseline): host perf_counter per call; NO cache flush on the CPU; "
                "at check_dims; " + both)

    def time(self, fn, args):
        torch = self.torch
        with torch.no_grad():
            if self.cuda:
                self.flush.add_(1)
                self.start.record()
                out = fn(*args)
                self.end.record()
                self.end.synchronize()
                return self.start.elapsed_time(self.end), out
            t0 = time.perf_counter()
            out = fn(*args)
            return (time.perf_counter() - t0) * 1e3, out


def stats(samples):
    s = sorted(samples)
    n = len(s)
    if n == 0:
        return {"n": 0}
    mean = sum(s) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in s) / (n - 1)) if n > 1 else 0.0
    q = lambda p: s[min(n - 1, max(0, int(round(p * (n - 1)))))]  # noqa: E731
    med = s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2
    return {"median_ms": med, "mean_ms": mean, "p10_ms": q(0.1), "p90_ms": q(0.9), "min_ms": s[0], "max_ms": s[-1],
            "n": n, "rse": (sd / math.sqrt(n) / mean) if n > 1 and mean > 0 else 0.0}


class AboveWindow(Exception):
    """measure() stopped a task whose first warm-up calls were all slower than abort_above_ms."""

    def __init__(self, fastest_ms, calls):
        super().__init__(f"{calls} warm-up calls, the fastest {fastest_ms:.3f} ms")
        self.fastest_ms, self.calls = fastest_ms, calls


def measure(timer, fns, draw, a, warmup=True, n_fixed=None, abort_above_ms=None):
    """Times each fn in fns with fresh inputs per call, interleaved. Returns one stats dict per fn.
    With abort_above_ms, raises AboveWindow once two warm-up calls of fns[0] both took longer (a
    task far above the window, found without a separate probe: --probe-n 0)."""
    if warmup:
        for j, fn in enumerate(fns):
            k, spent, fastest = 0, 0.0, math.inf
            while k < a.warmup_calls or (spent < a.warmup_ms and k < 50):
                x = draw()
                ms, out = timer.time(fn, x)
                del out, x
                spent += ms
                k += 1
                fastest = min(fastest, ms)
                if j == 0 and abort_above_ms is not None and k >= 2 and fastest > abort_above_ms:
                    raise AboveWindow(fastest, k)
    samples = [[] for _ in fns]
    t0 = time.monotonic()
    r = 0
    while True:
        order = list(range(len(fns))) if r % 2 == 0 else list(reversed(range(len(fns))))
        for i in order:
            x = draw()
            ms, out = timer.time(fns[i], x)
            del out, x
            samples[i].append(ms)
        r += 1
        n = len(samples[0])
        if n_fixed is not None:
            if n >= n_fixed:
                break
            continue
        if n >= a.max_n:
            break
        if n >= a.min_n and all(stats(s)["rse"] <= a.rse for s in samples):
            break
        if n >= a.min_n and time.monotonic() - t0 > a.max_task_s:
            break
    return [stats(s) for s in samples]


def cuda_healthy(torch, device):
    if not device.startswith("cuda"):
        return True
    try:
        torch.cuda.synchronize()
        return torch.ones(1, device=device).add_(1).item() == 2
    except Exception:
        return False


def is_oom(e):
    text = e if isinstance(e, str) else f"{type(e).__name__}: {e}"
    return "OutOfMemoryError" in text or "out of memory" in text.lower()


def release(torch, device, compiled=True, base=None):
    """Frees what a task left: Dynamo's caches (they hold the compiled module), reference cycles and
    the allocator's cache. The cycle pass (gc.collect) is skipped when the device is already back to
    `base` allocated bytes: it costs 0.1-0.2 s in a process that has imported Inductor, twice a task."""
    import gc
    if compiled:
        try:
            torch._dynamo.reset()
        except Exception:
            pass
    cuda = device.startswith("cuda")
    if base is None or not cuda or torch.cuda.memory_allocated() > base:
        gc.collect()
    if cuda:
        torch.cuda.empty_cache()


# ----------------------------------------------------------------------------------------------
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
        task_id, program, dims, seed = job
        t0 = time.monotonic()
        turn.wait_s = turn.held_s = backend.seconds = 0.0
        at_turn = []  # `sampling` when this worker's GPU work starts (test log): always 0
        err = ""
        base = torch.cuda.memory_allocated() if cuda else None
        try:
            with turn.hold():  # model build and one draw: allocations and init kernels
                at_turn.append(sampling.value)
                model, draw = build_task(torch, task_id, program, dims, device, seed)
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
            w["q"].put((pick["id"], pick["program"], pick["dims"], pick["seed"]))
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


# ----------------------------------------------------------------------------------------------
# The run.

PHASES = ("mem_wait", "exec_build", "checks", "probe_timing", "compile_warm", "lock_wait", "timing", "release")


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


def cpu_text(cpus):
    return ",".join(map(str, cpus)) if cpus else "all"


class Run:
    def __init__(self, a, torch):
        self.a = a
        self.torch = torch
        self.t0 = float(os.environ.get("KFORGE_SYNTH_GPU_T0", START))
        os.environ["KFORGE_SYNTH_GPU_T0"] = repr(self.t0)  # a re-exec keeps the original clock
        self.deadline = self.t0 + a.time_budget_s if a.time_budget_s else float("inf")
        self.timer = Timer(torch, a.device)
        self.env = environment(torch, a.device)
        self.cuda = a.device.startswith("cuda")
        self.overlap = bool(a.overlap and a.workers > 0)
        self.flags = flags_record(torch)
        self.flags["overlap"] = str(self.overlap).lower()
        self.method = self.timer.method(a)
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
               "graph_hash": task["graph_hash"], "est_runtime_ms": task["est_ms"], "status": status, "reason": reason, "dtype": task["dtype"],
               "dims": "full" if task["dims"] is None else "check", "window_ms": self.a.cfg["window_ms"]}
        if task.get("oom_retry"):
            fields["oom_retry"] = True
        rec.update(fields)
        rec["checks_impl"] = "fused" if FUSED.enabled and "ok" in FUSED.state.values() else "torch"
        rec.update({"env": self.env, "method": self.method, "flags": self.flags, "tool": TOOL,
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
                model, draw = build_task(torch, task["id"], task["program"], task["dims"], a.device, task["seed"])
        except Exception as e:  # noqa: BLE001
            return _Failure("build_failed", e)
        try:
            with ph("checks"):
                reason, checks = run_checks(torch, model, draw, task["info"], a.cfg, task["dims"] is None)
        except Exception as e:  # noqa: BLE001
            return _Failure("eager_failed", e)
        probe_ms = None
        if not reason and a.probe_n > 0:  # --probe-n 0: the final timing decides the window alone
            try:
                with self.sampling(ph, "probe_timing"):
                    (st,) = measure(self.timer, [model], draw, a, warmup=False, n_fixed=a.probe_n)
                probe_ms = st["median_ms"]
            except Exception as e:  # noqa: BLE001
                return _Failure("eager_failed", e)
            lo, hi = a.cfg["window_ms"]
            if probe_ms < lo / a.probe_margin or probe_ms > hi * a.probe_margin:
                reason = "eager_runtime_window"
        peak = (torch.cuda.max_memory_allocated() - base) if self.cuda else 0
        del model, draw
        with ph("release"):
            release(torch, a.device, compiled=False, base=base)
        return reason, checks, probe_ms, peak

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
                model, draw = build_task(torch, task["id"], task["program"], task["dims"], a.device, task["seed"])
        except Exception as e:  # noqa: BLE001
            return _Failure("build_failed", e)
        counters = None
        try:
            from torch._dynamo.utils import counters
            hits0 = counters["inductor"]["fxgraph_cache_hit"]
            miss0 = counters["inductor"]["fxgraph_cache_miss"]
        except Exception:
            hits0 = miss0 = 0
        tc = time.monotonic()
        try:
            with ph("compile_warm"):
                compiled = torch.compile(model)
                with torch.no_grad():
                    x = draw()
                    out_c = as_outputs(torch, compiled(*x))
                if self.cuda:
                    torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001
            return _Failure("torch_compile_build", e)
        warm_s = time.monotonic() - tc
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
                        mism = max(mism, failing_fraction(torch, e_, c_, task["info"]["atol"], task["info"]["rtol"]))
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
                st_e, st_c = measure(self.timer, [model, compiled], draw, a,
                                     abort_above_ms=hi * a.probe_margin if a.probe_n == 0 else None)
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
        ok = lo <= eager_ms <= hi
        return ("ok" if ok else "rejected:eager_runtime_window", "" if ok else "eager_runtime_window",
                dict(eager_ms=eager_ms, compile_ms=compile_ms, speedup=eager_ms / compile_ms if compile_ms > 0 else None,
                     eager=st_e, compile=st_c, **common))

    # -- the loops -------------------------------------------------------------------------------
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
            for w in self.writers.values():
                w.close()
        self.progress(force=True)
        print(self.time_report(), file=sys.stderr, flush=True)
        left = self.total - self.written
        print(f"synth_gpu: shard {a.shard}: wrote {self.written} row(s) to {', '.join(w.path for w in self.writers.values()) or '-'} (ok {self.ok}, rejected "
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


def cmd_run(a):
    shards, a.shard_n = parse_shard(a.shard)
    a.cfg = load_config(a.config)
    attrs, cols = read_dataset(a.dataset, ["id", "dtype", "program_py", "spec_yaml", "graph_hash", "est_runtime_ms"])
    a.out = a.out or os.path.join(os.path.dirname(os.path.abspath(a.dataset)), "gpu")
    n_rows = len(cols["id"])
    if a.ids:
        # Exactly these tasks, in the file's order, into this shard's part file (the driver splits
        # what is left over the GPUs of a host: tools/synth_dataset.sh).
        if len(shards) != 1:
            raise InputError(f"--ids takes --shard k/N (the part file it writes), not '{a.shard}'")
        row_of = {t: i for i, t in enumerate(cols["id"])}
        try:
            with open(a.ids) as f:
                want = [line.strip() for line in f if line.strip()]
        except OSError as e:
            raise InputError(f"{a.ids}: cannot read the id list ({error_line(e)})")
        unknown = [t for t in want if t not in row_of]
        if unknown:
            raise InputError(f"{a.ids}: {len(unknown)} id(s) not in {a.dataset}, e.g. {unknown[0]}")
        rows = list(dict.fromkeys(row_of[t] for t in want))
        shard_of = {i: shards[0] for i in rows}
    else:
        shard_of = {i: k for k in shards for i in shard_rows(n_rows, k, a.shard_n)}
        rows = sorted(shard_of)
    # Done: a record of this id for this task (same graph hash: a record of another dataset whose
    # ids happen to match does not count).
    done = {(r["id"], r.get("graph_hash")) for r in read_records(a.out)} if os.path.isdir(a.out) else set()
    todo = [i for i in rows if (cols["id"][i], cols["graph_hash"][i]) not in done]
    resumed = len(rows) - len(todo)
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
    tasks = []
    for i in todo:
        try:
            info = spec_info(cols["spec_yaml"][i])
        except Exception as e:  # noqa: BLE001
            raise InputError(f"{a.dataset}: row {i} ({cols['id'][i]}): spec_yaml does not parse ({error_line(e)})")
        if dims_mode == "check" and not info["check_dims"]:
            raise InputError(f"{a.dataset}: task {cols['id'][i]} has no check_dims (needed by --dims check)")
        tasks.append({"graph_hash": cols["graph_hash"][i], "est_ms": cols["est_runtime_ms"][i],
                      "id": cols["id"][i], "row": i, "shard": shard_of[i], "dtype": cols["dtype"][i], "program": cols["program_py"][i],
                      "info": info, "seed": info["seed"], "dims": info["check_dims"] if dims_mode == "check" else None})
    os.makedirs(a.out, exist_ok=True)
    what = f"{a.ids} lists {len(rows)}" if a.ids else \
        f"shard {a.shard} has {len(rows)} (rows {rows[0] if rows else 0}-{rows[-1] if rows else -1})"
    print(f"synth_gpu: {a.dataset}: {n_rows} tasks; {what}, {resumed} already written, {len(tasks)} to do in this run; device {a.device} "
          f"at {dims_mode} dims; window {a.cfg['window_ms'][0]:g}-{a.cfg['window_ms'][1]:g} ms; {a.workers} compile "
          f"worker(s), {'overlapping the timing' if a.overlap and a.workers > 0 else 'no overlap'}; out {a.out}",
          file=sys.stderr, flush=True)
    if a.device == "cpu" and a.threads:
        torch.set_num_threads(a.threads)
    return Run(a, torch).go(tasks, resumed)


# ----------------------------------------------------------------------------------------------
# Merge: the records back into the dataset, the baselines into each spec, a summary.

def yaml_str(s):
    return json.dumps(str(s))  # a JSON string is a YAML double-quoted scalar


def yaml_num(x):
    return repr(float(f"{x:.6g}"))


def baselines_block(rec):
    env = rec.get("env", {})
    lines = ["baselines:", f"  eager_ms: {yaml_num(rec['eager_ms'])}"]
    if rec.get("compile_ms"):
        lines.append(f"  compile_ms: {yaml_num(rec['compile_ms'])}")
    lines += [f"  gpu: {yaml_str(env.get('gpu', ''))}", f"  torch: {yaml_str(env.get('torch', ''))}",
              f"  cuda: {yaml_str(env.get('cuda', ''))}", f"  method: {yaml_str(rec.get('method', ''))}"]
    flags = rec.get("flags") or {}
    if flags:
        lines.append("  flags: {" + ", ".join(f"{k}: {yaml_str(v)}" for k, v in sorted(flags.items())) + "}")
    return "\n".join(lines) + "\n"


def spec_without_baselines(spec):
    """The spec text's lines without its top-level `baselines:` block; every other line as it was."""
    out, skip = [], False
    for ln in spec.splitlines(keepends=True):
        top = ln[:1] not in (" ", "\t", "#", "-", "\n", "") and ":" in ln
        if top:
            skip = ln.startswith("baselines:")
        if not skip:
            out.append(ln)
    return out


def spec_with_baselines(spec, rec):
    """The spec text with its top-level `baselines:` block replaced (or inserted before
    `provenance:`, where kforge writes it); every other line is kept as it was."""
    out = spec_without_baselines(spec)
    block = baselines_block(rec)
    for i, ln in enumerate(out):
        if ln.startswith("provenance:"):
            return "".join(out[:i]) + block + "".join(out[i:])
    text = "".join(out)
    return text + ("" if text.endswith("\n") or not text else "\n") + block


def pick_records(recs):
    """One record per id: the last one written (files and lines in order)."""
    by_id = {}
    for r in recs:
        by_id[r["id"]] = r
    return by_id


def percentile(xs, p):
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, int(round(p * (len(s) - 1)))))] if s else None


def gpu_summary(ids, by_id, n_tasks, meta=None):
    """The GPU stage's counts and histograms. `meta` (id -> {"n_ops", "split", "dtype", "family"},
    from the dataset's columns) adds what the shipped dataset holds: the kept tasks per operator
    count, split, dtype and first-operator family (the CPU summary counts them before the GPU stage)."""
    kept = [by_id[i] for i in ids if i in by_id and by_id[i]["status"] == "ok"]
    measured = [by_id[i] for i in ids if i in by_id]
    rejected = {k: 0 for k in REASONS}
    for r in measured:
        if r["status"] != "ok":
            k = r.get("reason") or r["status"].split(":", 1)[-1]
            rejected[k] = rejected.get(k, 0) + 1
    kept_by = {}
    if meta:
        for key in ("n_ops", "split", "dtype", "family"):
            c = {}
            for r in kept:
                v = str(meta.get(r["id"], {}).get(key, "?"))
                c[v] = c.get(v, 0) + 1
            kept_by[key] = dict(sorted(c.items(), key=lambda kv: (len(kv[0]), kv[0]) if key == "n_ops" else kv[0]))
    hist = {b: 0 for b in RUNTIME_BINS}
    hist_c = {b: 0 for b in RUNTIME_BINS}
    sp_hist = {b: 0 for b in SPEEDUP_BINS}
    speedups = []
    for r in kept:
        hist[runtime_bin(r["eager_ms"])] += 1
        if r.get("compile_ms"):
            hist_c[runtime_bin(r["compile_ms"])] += 1
            s = r["eager_ms"] / r["compile_ms"]
            speedups.append(s)
            sp_hist[speedup_bin(s)] += 1
    env = (kept or measured or [{}])[-1].get("env", {})
    sp = {}
    if speedups:
        sp = {"median": percentile(speedups, 0.5), "p10": percentile(speedups, 0.1), "p90": percentile(speedups, 0.9),
              "geomean": math.exp(sum(math.log(s) for s in speedups) / len(speedups)),
              "compile_faster_share": sum(1 for s in speedups if s > 1.05) / len(speedups),
              "compile_slower_share": sum(1 for s in speedups if s < 0.95) / len(speedups)}
    # The cost model's estimate against the measurement (every task with an eager time), to tune
    # configs/synth.yaml's cost_model and target window.
    ratios = [r["eager_ms"] / r["est_runtime_ms"] for r in measured
              if r.get("eager_ms") and (r.get("est_runtime_ms") or 0) > 0]
    est = {}
    if ratios:
        est = {"median": percentile(ratios, 0.5), "p10": percentile(ratios, 0.1), "p90": percentile(ratios, 0.9),
               "n": len(ratios)}
    return {
        "tool": TOOL,
        "tasks": n_tasks,
        "measured": len(measured),
        "pending": n_tasks - len(measured),
        "kept": len(kept),
        "rejected": rejected,
        "eager_runtime_ms": hist,
        "compile_runtime_ms": hist_c,
        "compile_speedup": sp_hist,
        "compile_speedup_stats": sp,
        "eager_over_estimate": est,
        "kept_ops_per_task": kept_by.get("n_ops", {}),
        "kept_splits": kept_by.get("split", {}),
        "kept_dtypes": kept_by.get("dtype", {}),
        "kept_families": kept_by.get("family", {}),
        "seconds": {"serial_wall_s": round(sum(r.get("wall_s") or 0 for r in measured), 1),
                    "phase_s": {k: round(sum((r.get("phase_s") or {}).get(k, 0) for r in measured), 1)
                                for k in PHASES + ("other",) if any(k in (r.get("phase_s") or {}) for r in measured)},
                    "compile_cold_s": round(sum(r.get("compile_cold_s") or 0 for r in measured), 1),
                    "compile_warm_s": round(sum(r.get("compile_warm_s") or 0 for r in measured), 1)},
        "gpu": env.get("gpu", ""), "driver": env.get("driver", ""), "torch": env.get("torch", ""),
        "cuda": env.get("cuda", ""), "device": env.get("device", ""),
        "dims": sorted({r.get("dims", "") for r in measured}),
        "window_ms": (measured[-1].get("window_ms") if measured else None),
        "method": (measured[-1].get("method") if measured else ""),
        "flags": (measured[-1].get("flags") if measured else {}),
    }


def summary_table(g):
    def pct(c, n):
        return f"{c:<8d} ({100.0 * c / n:.1f} %)" if n else str(c)
    rows = [("GPU stage (tools/synth_gpu.py)", ""), ("  tasks", str(g["tasks"])), ("  measured", str(g["measured"])),
            ("  pending", str(g["pending"]))]
    for k, v in g["rejected"].items():
        rows.append((f"  rejected: {k}", pct(v, g["measured"])))
    rows.append(("  kept (status ok)", pct(g["kept"], g["measured"])))
    rows.append(("  device", f"{g['gpu']} (driver {g['driver'] or '?'}, torch {g['torch']}, CUDA {g['cuda'] or '-'})"))
    rows.append(("eager runtime (ms, measured, kept)", ""))
    rows += [(f"  {b}", pct(c, g["kept"])) for b, c in g["eager_runtime_ms"].items()]
    rows.append(("torch.compile speedup (eager / compiled, kept)", ""))
    rows += [(f"  {b}", pct(c, g["kept"])) for b, c in g["compile_speedup"].items()]
    s = g["compile_speedup_stats"]
    if s:
        rows.append(("  median / geomean / p10 / p90", f"{s['median']:.2f} / {s['geomean']:.2f} / {s['p10']:.2f} / {s['p90']:.2f}"))
    e = g.get("eager_over_estimate")
    if e:
        rows.append(("measured eager / estimated (all)", f"median {e['median']:.2f}, p10 {e['p10']:.2f}, p90 {e['p90']:.2f}"))
    rows.append(("  serial GPU wall / cold compile (s)", f"{g['seconds']['serial_wall_s']} / {g['seconds']['compile_cold_s']}"))
    ph = g["seconds"].get("phase_s")
    if ph:
        rows.append(("  serial wall by phase (s)", ", ".join(f"{k} {v}" for k, v in ph.items())))
    for key, title in (("kept_ops_per_task", "operators per task (kept)"), ("kept_splits", "splits (kept)"),
                       ("kept_dtypes", "dtypes (kept)"), ("kept_families", "first-operator families (kept)")):
        if g.get(key):
            rows.append((title, ""))
            rows += [(f"  {b}", pct(c, g["kept"])) for b, c in g[key].items()]
    return "".join(f"{a:<38s}{b}\n" if b else f"{a}\n" for a, b in rows)


def write_results(out_path, g, by_id, dataset):
    """The run in the format of tools/bench/results/ (ARCHITECTURE.md, "Tests and benchmarks")."""
    kept = sorted(r["eager_ms"] for r in by_id.values() if r["status"] == "ok")
    figures = {"tasks_count": g["tasks"], "tasks_measured_count": g["measured"], "tasks_kept_count": g["kept"],
               "tasks_pending_count": g["pending"]}
    for k, v in g["rejected"].items():
        figures[f"rejected_{k}_count"] = v
    if kept:
        figures["eager_ms_p50"] = percentile(kept, 0.5)
    for split, c in g.get("kept_splits", {}).items():
        figures[f"tasks_kept_{split}_count"] = c
    s = g["compile_speedup_stats"]
    if s:
        figures["compile_speedup_median_ratio"] = s["median"]
        figures["compile_speedup_geomean_ratio"] = s["geomean"]
        figures["compile_faster_share_pct"] = 100 * s["compile_faster_share"]
    figures["serial_wall_s_total"] = g["seconds"]["serial_wall_s"]
    figures["compile_cold_s_total"] = g["seconds"]["compile_cold_s"]
    if g["measured"]:
        figures["serial_wall_s_per_task"] = g["seconds"]["serial_wall_s"] / g["measured"]
        figures["compile_cold_s_per_task"] = g["seconds"]["compile_cold_s"] / g["measured"]
    doc = {"gpu": g["gpu"], "driver": g["driver"], "cuda": g["cuda"], "torch": g["torch"],
           "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "commit": results_doc.commit(),
           "command": f"python3 tools/synth_gpu.py {dataset} --shard ...; python3 tools/synth_gpu.py --merge {dataset}",
           "figures": figures}
    results_doc.write(out_path, doc, "synth_gpu")


def cmd_merge(a):
    import h5py
    import numpy as np
    path = a.dataset
    attrs, _ = read_dataset(path, ["id"])  # validates the file (one error line otherwise)
    out_dir = a.out or os.path.join(os.path.dirname(os.path.abspath(path)), "gpu")
    if not os.path.isdir(out_dir) or not part_files(out_dir):
        raise InputError(f"{out_dir}: no part-*.jsonl files to merge (run the GPU stage first)")
    all_recs = read_records(out_dir)
    by_id = pick_records(all_recs)
    cpu = [r["id"] for r in by_id.values() if not str(r.get("env", {}).get("device", "")).startswith("cuda")]
    if cpu and not a.allow_cpu:
        raise InputError(f"{out_dir}: {len(cpu)} record(s) were measured with --device cpu (e.g. {cpu[0]}); they are "
                         f"not GPU baselines (pass --allow-cpu to merge them anyway, for tests)")
    with h5py.File(path, "r") as f:
        cols = {}
        for name, ds in f["tasks"].items():
            cols[name] = (list(ds.asstr()[:]) if h5py.check_string_dtype(ds.dtype) else ds[:], ds.dtype)
        file_attrs = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()}
    ids = cols["id"][0]
    n = len(ids)
    eager = np.array(cols["eager_ms"][0], dtype=np.float64)
    comp = np.array(cols["compile_ms"][0], dtype=np.float64)
    bjson, status, spec = list(cols["baseline_json"][0]), list(cols["status"][0]), list(cols["spec_yaml"][0])
    # Only records of these tasks (same id and graph hash: not another dataset's that shares an id).
    hash_of = dict(zip(ids, cols["graph_hash"][0]))
    fits = [r.get("graph_hash") in (None, hash_of.get(r["id"])) for r in all_recs]
    stale = sum(1 for r, ok in zip(all_recs, fits) if not ok and r["id"] in hash_of)
    by_id = pick_records([r for r, ok in zip(all_recs, fits) if ok])
    updated = 0
    for i, tid in enumerate(ids):
        r = by_id.get(tid)
        if r is None:
            continue
        updated += 1
        env = r.get("env", {})
        status[i] = r["status"]
        eager[i] = r["eager_ms"] if r.get("eager_ms") is not None else math.nan
        comp[i] = r["compile_ms"] if r.get("compile_ms") is not None else math.nan
        short = ("median_ms", "p10_ms", "p90_ms", "n", "rse")
        b = {"gpu": env.get("gpu", ""), "driver": env.get("driver", ""), "torch": env.get("torch", ""),
             "cuda": env.get("cuda", ""), "cudnn": env.get("cudnn"), "triton": env.get("triton"),
             "method": r.get("method", ""), "flags": r.get("flags", {}),
             "status": r["status"], "dims": r.get("dims"), "date": r.get("date"), "tool": r.get("tool"),
             "eager": {k: r["eager"][k] for k in short if k in r["eager"]} if r.get("eager") else None,
             "compile": {k: r["compile"][k] for k in short if k in r["compile"]} if r.get("compile") else None,
             "probe_eager_ms": r.get("probe_eager_ms"), "compile_cold_s": r.get("compile_cold_s"),
             "compile_warm_s": r.get("compile_warm_s"), "peak_mem_gb": r.get("peak_mem_gb"), "error": r.get("error")}
        bjson[i] = json.dumps({k: v for k, v in b.items() if v is not None}, allow_nan=False)
        if r["status"] == "ok":
            spec[i] = spec_with_baselines(spec[i], r)
    cols["eager_ms"] = (eager, cols["eager_ms"][1])
    cols["compile_ms"] = (comp, cols["compile_ms"][1])
    cols["baseline_json"] = (bjson, cols["baseline_json"][1])
    cols["status"] = (status, cols["status"][1])
    cols["spec_yaml"] = (spec, cols["spec_yaml"][1])

    meta_cols = {k: list(cols[k][0]) for k in ("n_ops", "split", "dtype", "family") if k in cols}
    meta = {tid: {k: v[i] for k, v in meta_cols.items()} for i, tid in enumerate(ids)}
    g = gpu_summary(ids, by_id, n, meta)
    try:
        summary = json.loads(file_attrs.get("summary_json") or "{}")
    except ValueError:
        summary = {}
    summary["gpu"] = g
    file_attrs["summary_json"] = json.dumps(summary)
    stages = "eager_runtime_window, torch_compile_build, baselines"
    file_attrs["gpu_stages"] = (f"done: {stages} ({g['kept']} ok, {g['measured'] - g['kept']} rejected; {g['gpu']})"
                                if g["pending"] == 0 else
                                f"partial: {stages} ({g['measured']} of {n} measured, {g['pending']} pending)")

    # A fresh file (the layout of data_synth/dataset_h5.cpp), moved into place when complete.
    tmp = path + ".merge.tmp"
    sdt = h5py.string_dtype("utf-8")
    with h5py.File(tmp, "w") as f:
        for k, v in file_attrs.items():
            if isinstance(v, str):
                f.attrs.create(k, v, dtype=sdt)
            else:
                f.attrs[k] = v
        t = f.create_group("tasks")
        for name, (data, dt) in cols.items():
            if h5py.check_string_dtype(dt):
                t.create_dataset(name, data=np.array(data, dtype=object), dtype=sdt)
            else:
                t.create_dataset(name, data=np.asarray(data, dtype=dt), dtype=dt)
    os.replace(tmp, path)

    d = os.path.dirname(os.path.abspath(path))
    sj = os.path.join(d, "summary.json")
    try:
        with open(sj) as f:
            file_summary = json.load(f)
    except (OSError, ValueError):
        file_summary = {k: v for k, v in summary.items() if k != "gpu"}
    file_summary["gpu"] = g
    with open(sj, "w") as f:
        json.dump(file_summary, f, indent=2)
        f.write("\n")
    table = summary_table(g)
    st = os.path.join(d, "summary.txt")
    old = open(st).read() if os.path.exists(st) else ""
    marker = "GPU stage (tools/synth_gpu.py)"
    if marker in old:
        old = old[:old.index(marker)]
    with open(st, "w") as f:
        f.write(old + table)
    print(table, end="")
    print(f"synth_gpu: merged {updated} record(s) into {path} ({g['kept']} ok, {g['measured'] - g['kept']} rejected, "
          f"{g['pending']} pending); wrote summary.json, summary.txt"
          + (f"; ignored {stale} record(s) of another task with the same id" if stale else ""), flush=True)
    if a.results:
        write_results(a.results, g, by_id, path)
    plots = os.path.join(ROOT, "tools", "synth_plots.py")
    if os.path.exists(plots) and not a.no_plots:
        r = subprocess.run([sys.executable, plots, sj], capture_output=True, text=True)
        print((r.stdout or r.stderr).strip(), flush=True)
    return 0


def cmd_compare(a):
    """Two runs over the same rows (e.g. --no-overlap against overlap, or an old calibration against a
    new one): statuses, the ratio of the medians task by task, the noise, the serial seconds."""
    new_dir = a.out or os.path.join(os.path.dirname(os.path.abspath(a.dataset)), "gpu")
    for d in (a.compare, new_dir):
        if not os.path.isdir(d) or not part_files(d):
            raise InputError(f"{d}: no part-*.jsonl files to compare")
    ref, new = pick_records(read_records(a.compare)), pick_records(read_records(new_dir))
    both = sorted(i for i in ref if i in new and ref[i].get("graph_hash") == new[i].get("graph_hash"))
    print(f"synth_gpu: compare {new_dir} (new) with {a.compare} (reference): {len(both)} task(s) in both "
          f"({len(new)} new, {len(ref)} reference)")
    if not both:
        return 0
    differ = [i for i in both if ref[i]["status"] != new[i]["status"]]
    print(f"  statuses: {len(both) - len(differ)} of {len(both)} agree"
          + "".join(f"\n    {i}: {ref[i]['status']} -> {new[i]['status']}" for i in differ[:10])
          + (f"\n    ... {len(differ) - 10} more" if len(differ) > 10 else ""))

    def q(xs):
        if not xs:
            return "-"
        gm = math.exp(sum(math.log(x) for x in xs) / len(xs)) if all(x > 0 for x in xs) else float("nan")
        return (f"median {percentile(xs, 0.5):.4g}, p10 {percentile(xs, 0.1):.4g}, p90 {percentile(xs, 0.9):.4g}, "
                f"geomean {gm:.4g} (n {len(xs)})")
    ok = [i for i in both if ref[i]["status"] == new[i]["status"] == "ok"]
    for key in ("eager_ms", "compile_ms"):
        rs = [new[i][key] / ref[i][key] for i in ok if new[i].get(key) and ref[i].get(key)]
        print(f"  {key} new / reference (ok in both): {q(rs)}")
    for key in ("eager", "compile"):
        for name, recs in (("reference", ref), ("new", new)):
            xs = [recs[i][key]["rse"] for i in ok if (recs[i].get(key) or {}).get("rse") is not None]
            ns = [recs[i][key]["n"] for i in ok if (recs[i].get(key) or {}).get("n")]
            if xs:
                print(f"  {key} noise, {name}: RSE median {percentile(xs, 0.5):.4f}, p90 {percentile(xs, 0.9):.4f}; "
                      f"n median {percentile(ns, 0.5)}")
    for name, recs in (("reference", ref), ("new", new)):
        w = [recs[i].get("wall_s") or 0.0 for i in both]
        wok = [recs[i].get("wall_s") or 0.0 for i in ok]
        line = (f"  wall_s, {name}: sum {sum(w):.1f} over {len(w)}; ok tasks median {percentile(wok, 0.5) if wok else 0:.3f}, "
                f"sum {sum(wok):.1f}")
        ph = [recs[i]["phase_s"] for i in ok if recs[i].get("phase_s")]
        if ph:
            keys = [k for k in PHASES + ("other",) if any(k in p for p in ph)]
            line += "; per ok task, median: " + ", ".join(f"{k} {percentile([p.get(k, 0.0) for p in ph], 0.5):.3f}"
                                                            for k in keys)
        print(line)
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
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
                    help="synthesis config: window_ms_low/high, cpu_check.min_informative_fraction")
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
    ap.add_argument("--warmup-calls", type=int, default=3)
    ap.add_argument("--warmup-ms", type=float, default=50.0)
    ap.add_argument("--min-n", type=int, default=10)
    ap.add_argument("--max-n", type=int, default=100)
    ap.add_argument("--rse", type=float, default=0.01, help="stop once the relative standard error is at most this")
    ap.add_argument("--max-task-s", type=float, default=3.0, help="stop sampling a task after this many seconds")
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


if __name__ == "__main__":
    sys.exit(main())
