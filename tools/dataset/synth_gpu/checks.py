"""The output checks of the probe, and the one place the GPU stage applies the tolerance rule.

The rule is kforge's, data_synth/reference/tolerance.h (`outside_tolerance`; the CPU stage's twin of
these checks, data_synth/synth/cpu_checks.cpp, calls it): an element passes when |out - ref| <=
atol + rtol * |ref|, in double; atol and rtol are the task's, as `kforge tasks export-gpu` resolves
them. Here only for finite values: run_checks rejects a non-finite output (nonfinite_gpu) before it
counts. `exceeds` below is that rule on torch tensors; every count here goes through it, and the
fused Triton kernel (FusedCounts) is proved equal to it before first use. Both are held to the C++
by tests/golden/tolerance.json (tests/tools/test_golden_tolerance.py)."""
import os
import sys

from .common import error_line
from .torch_env import as_outputs

CHUNK = 1 << 26  # elements per chunk of the tolerance tests (bounds the float64 temporaries to ~2 GB)
# Two eager runs on the same inputs may differ by at most this share of the tolerance (the largest
# |a1 - a2| / (atol + rtol |a1|)): a reference whose own noise stays this far inside the tolerance
# cannot fail a correct candidate, whose error has the rest. cuDNN's transposed convolutions sum
# with atomics (KernelBench's 32 ConvTranspose problems differed bitwise on an H100, 2026-12-07);
# a forward that draws its own randomness differs by far more.
NONDETERMINISM_SHARE = 0.1


def failing_fraction(torch, ref, answer, atol, rtol):
    """Share of elements where `answer` fails the tolerance test against `ref` (tolerance.h's rule
    on finite values: |a - r| > atol + rtol * |r|, in double). On a GPU one fused pass (FUSED,
    below); else chunked to bound memory, the count on the device until the end (one host sync)."""
    r = ref.reshape(-1)
    a = answer.reshape(-1) if answer.numel() == ref.numel() else answer.expand_as(ref).reshape(-1)
    n = r.numel()
    if n == 0:
        return 0.0
    if FUSED.usable(torch, r, a):
        return FUSED.counts(torch, r, a, None, atol, rtol)[0] / n
    return failing_fraction_eager(torch, r, a, atol, rtol) / n


def tolerance(rr, atol, rtol):
    """atol + rtol * |r| for a float64 chunk of the reference, as two rounded double operations."""
    return rr.abs().mul_(rtol).add_(atol)


def exceeds(torch, diff_abs, thr):
    """How many elements fail the rule, given |out - ref| and the tolerance (NaN fails nothing, as
    a comparison with NaN is false: the non-finite check runs before)."""
    return (diff_abs > thr).sum()


def failing_fraction_eager(torch, r, a, atol, rtol):
    """The failing count of two flat tensors of one size, with torch operations, chunked."""
    n = r.numel()
    bad = torch.zeros((), dtype=torch.int64, device=r.device)
    for i in range(0, n, CHUNK):
        rr = r[i:i + CHUNK].double()
        thr = tolerance(rr, atol, rtol)
        bad += exceeds(torch, torch.sub(a[i:i + CHUNK].double(), rr).abs_(), thr)  # never in place on the caller's tensors
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
        thr = tolerance(rr, atol, rtol)
        buf = rr.abs()  # |0 - r|, then reused for |y - x| and |c - x| (the same double values as .double() and sub)
        bad[1] += exceeds(torch, buf, thr)
        buf.copy_(b[i:i + CHUNK]).sub_(rr).abs_()
        bad[0] += exceeds(torch, buf, thr)
        if c is not None:
            torch.sub(c, rr, out=buf).abs_()
            bad[2] += exceeds(torch, buf, thr)
        del rr, buf, thr
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
    # The self-check's lengths: one element, a few, one block, several blocks with a ragged end, and
    # many blocks (49).
    SIZES = (1, 7, BLOCK, 3 * BLOCK + 5, 100003)

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
                for n in self.SIZES:
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


def finite_masks(torch, x, y):
    """(whether x and y, two floating chunks of one size, hold their non-finite values at the same
    places and alike, NaN with NaN; x's finite mask; y's)."""
    fx, fy = torch.isfinite(x), torch.isfinite(y)
    return bool(torch.equal(fx, fy)) and bool(torch.equal(x[~fx].nan_to_num(0), y[~fy].nan_to_num(0))), fx, fy


def noise_share(torch, x, y, atol, rtol):
    """The largest |y - x| / (atol + rtol |x|) in double over two runs' floating outputs x and y of
    one shape, chunk by chunk; inf where their non-finite values differ in place or value."""
    r, b = x.reshape(-1), y.reshape(-1)
    worst = 0.0
    for i in range(0, r.numel(), CHUNK):
        xx, yy = r[i:i + CHUNK], b[i:i + CHUNK]
        same, fx, fy = finite_masks(torch, xx, yy)
        if not same:
            return float("inf")
        rr = xx[fx].double()
        if rr.numel():
            worst = max(worst, float((yy[fy].double() - rr).abs_().div_(tolerance(rr, atol, rtol)).max().item()))
    return worst


def run_checks(torch, model, draw, task, frac_min, full_dims):
    """The output checks at the dims in effect (task: a record of `kforge tasks export-gpu`).
    Returns (reason or "", details)."""
    atol, rtol = task["tolerance"]["atol"], task["tolerance"]["rtol"]
    with torch.no_grad():
        xa = draw()
        a1 = as_outputs(torch, model(*xa))
        a2 = as_outputs(torch, model(*xa))
        del xa
        xb = draw()
        b = as_outputs(torch, model(*xb))
        del xb
    d = {"outputs": [[list(o.shape), str(o.dtype).replace("torch.", "")] for o in a1]}
    if full_dims and task["outputs"]:
        want = [[list(o["shape"]), o["dtype"]] for o in task["outputs"]]
        if want != d["outputs"]:
            d["spec_outputs"] = want
            return "spec_mismatch", d
    if not a1:
        return "eager_failed", dict(d, error="the model returned no tensor")
    for x, y in zip(a1, a2):
        if not torch.equal(x, y) and not (x.is_floating_point() and torch.equal(torch.isnan(x), torch.isnan(y))
                                          and torch.equal(x.nan_to_num(0), y.nan_to_num(0))):
            share = noise_share(torch, x, y, atol, rtol) if x.is_floating_point() else float("inf")
            d["noise_share_same_inputs"] = share if share != float("inf") else "inf"
            if share > NONDETERMINISM_SHARE:
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

