"""The draw of each argument in kforge's grammar (data_synth/task/draw.h: normal, uniform, randint,
constant), fitted to the values the module produced, and sampling a draw with torch.

The rules, in order (the first that applies; README.md gives the reasons):
  1. every element equal (or none): an integer or bool tensor -> constant(value); a float one
     -> uniform(v/2, 3v/2) (sign kept), or uniform(-0.5, 0.5) for 0: kforge refuses a constant
     float argument (a kernel that assumed the value, a norm's weight of 1, would pass every trial)
  2. an integer or bool tensor                     -> randint(min, max + 1)
  3. float values that are all integers, <= 64 distinct, >= 4 elements -> randint(min, max + 1)
  4. weight/bias of nn.Linear, Bilinear, ConvNd, ConvTransposeNd, or any weight of an RNN/LSTM/GRU
     (cell), within PyTorch's default init bound b  -> uniform(-b, b) (b = 1/sqrt(fan_in), or
     1/sqrt(hidden_size) for the recurrent ones)
  5. a fit to the values: uniform or normal, by the source of get_inputs() for inputs (only
     torch.rand -> uniform, only torch.randn -> normal), else by the excess kurtosis (< -0.6:
     uniform; 32 values at least, else normal). Parameters snap to the nearest "nice" value within
     four standard errors (0, 1, 0.02, ... and the usual init bounds and stds of the tensor's fan-in
     and fan-out); a uniform's ends snap within the band n uniform values miss with probability 1e-3.
     A normal fit that would cross zero where every value kept one sign becomes a
     uniform over the values' range (log, sqrt of a torch.rand input stay defined).
"""
import math
import re

import torch

RAND_ONLY, RANDN_ONLY = "uniform", "normal"
NORMAL_BOUND = 3.4641016151377544  # kforge's normal is within +-sqrt(12) std (Irwin-Hall of four)

LINEAR_LIKE = ("Linear", "LazyLinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d")
RECURRENT = ("RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell")


def source_hint(get_inputs_text):
    """uniform / normal when get_inputs' source uses only torch.rand / only torch.randn, else None."""
    randn = len(re.findall(r"\brandn(_like)?\s*\(", get_inputs_text))
    rand = len(re.findall(r"\brand(_like)?\s*\(", get_inputs_text))
    if rand and not randn:
        return RAND_ONLY
    if randn and not rand:
        return RANDN_ONLY
    return None


def nice(x, tol, prefer=(), zero=True):
    """The value with the fewest significant digits within tol of x (`prefer` first, then 0 if allowed)."""
    for c in prefer:
        if abs(c - x) <= tol:
            return c
    if zero and abs(x) <= tol:
        return 0.0
    for sig in range(1, 10):
        c = float(f"{x:.{sig - 1}e}")
        if abs(c - x) <= tol:
            return c
    return float(f"{x:.9e}")


def nice_in(lo, hi):
    """The value with the fewest significant digits in [lo, hi]."""
    if lo <= 0.0 <= hi:
        return 0.0
    mid = (lo + hi) / 2
    for sig in range(1, 12):
        for c in (float(f"{mid:.{sig - 1}e}"), float(f"{lo:.{sig - 1}e}"), float(f"{hi:.{sig - 1}e}")):
            if lo <= c <= hi:
                return c
    return lo


def fan_in_out(t):
    if t.dim() < 2:
        return None, None
    receptive = math.prod(t.shape[2:]) if t.dim() > 2 else 1
    return t.shape[1] * receptive, t.shape[0] * receptive


def module_bound(model, name, t):
    """PyTorch's default init bound for a parameter of a known module, else None."""
    prefix, _, attr = name.rpartition(".")
    try:
        owner = model.get_submodule(prefix) if prefix else model
    except AttributeError:
        return None
    kind = type(owner).__name__
    if kind in RECURRENT and hasattr(owner, "hidden_size"):
        return 1.0 / math.sqrt(owner.hidden_size)
    if kind in LINEAR_LIKE and attr in ("weight", "bias") and isinstance(getattr(owner, "weight", None), torch.Tensor):
        fan_in, _ = fan_in_out(owner.weight)
        return 1.0 / math.sqrt(fan_in) if fan_in else None
    if kind == "Bilinear" and attr in ("weight", "bias"):
        return 1.0 / math.sqrt(owner.weight.shape[1])
    return None


def state_candidates(t):
    """Usual init bounds (uniform) and stds (normal) for a tensor of t's fans."""
    fan_in, fan_out = fan_in_out(t)
    if not fan_in:
        return [], []
    bounds = [1 / math.sqrt(fan_in), math.sqrt(3 / fan_in), math.sqrt(6 / fan_in), math.sqrt(6 / (fan_in + fan_out))]
    stds = [math.sqrt(2 / (fan_in + fan_out)), math.sqrt(2 / fan_in), math.sqrt(1 / fan_in)]
    return bounds, stds


def fit_uniform(v, lo, hi, n, bounds):
    # An end e beyond the values stays plausible while ((hi - lo) / (e - lo))^n >= 1e-3: the chance that
    # n uniform draws all miss the band between the values and e (about 6.9 / n of the range for large n;
    # at most half the range, for a handful of values).
    tol = (hi - lo) * min(1e-3 ** (-1.0 / n) - 1.0, 0.5)
    lo_range = (max(lo - tol, 0.0) if lo >= 0 else lo - tol, lo)
    hi_range = (hi, min(hi + tol, 0.0) if hi <= 0 else hi + tol)
    low, high = nice_in(*lo_range), nice_in(*hi_range)
    reach = max(abs(lo), abs(hi))
    if abs(low + high) <= tol:
        for b in bounds:
            if reach <= b <= reach + tol:
                return {"dist": "uniform", "low": -b, "high": b}
    if not high > low:
        high = hi + max(tol, abs(hi) * 1e-6, 1e-12)
    return {"dist": "uniform", "low": low, "high": high}


def fit(v, role, hint, t):
    """A uniform or normal draw fitted to the finite values v (float64, at least two distinct)."""
    n = v.numel()
    mean, std = float(v.mean()), float(v.std())
    lo, hi = float(v.min()), float(v.max())
    kurt = float(((v - mean) ** 4).mean() / (std ** 4)) - 3.0 if std > 0 else 0.0
    bounds, stds = state_candidates(t) if role != "input" else ([], [])
    kind = hint if role == "input" and hint else ("uniform" if n >= 32 and kurt < -0.6 else "normal")
    if kind == "uniform":
        return fit_uniform(v, lo, hi, n, bounds)
    se_m, se_s = std / math.sqrt(n), std / math.sqrt(2 * n)
    m = nice(mean, 4 * se_m)
    s = next((c for c in stds if abs(c - std) <= 4 * se_s), None) or nice(std, 4 * se_s, prefer=(1.0,), zero=False)
    if s <= 0:
        s = std
    if (lo >= 0 and m - NORMAL_BOUND * s < 0) or (hi <= 0 and m + NORMAL_BOUND * s > 0):
        return fit_uniform(v, lo, hi, n, [])
    return {"dist": "normal", "mean": m, "std": s}


def moved(value):
    """The draw around a float value that every element of a tensor had: it varies between trials."""
    if value == 0:
        return {"dist": "uniform", "low": -0.5, "high": 0.5}
    lo, hi = sorted((0.5 * value, 1.5 * value))
    return {"dist": "uniform", "low": lo, "high": hi}


def infer(name, role, t, model, hint):
    """(draw, rule): the draw for argument `name` (role input/parameter/buffer) holding tensor t."""
    t = t.detach()
    if t.numel() == 0:
        return (moved(0.0) if t.is_floating_point() else {"dist": "constant", "value": 0}), "empty"
    if t.dtype == torch.bool or not t.is_floating_point():
        lo, hi = int(t.min()), int(t.max())
        if lo == hi:
            return {"dist": "constant", "value": lo}, "all equal"
        return {"dist": "randint", "low": lo, "high": hi + 1}, "integer tensor"
    v = t.double().flatten()
    v = v[torch.isfinite(v)]
    if v.numel() == 0:
        return moved(0.0), "no finite value: moved around 0"
    lo, hi = float(v.min()), float(v.max())
    if lo == hi:
        return moved(lo), f"all equal to {lo:g}: moved around it (a constant float argument is refused)"
    if v.numel() >= 4 and bool((v == v.round()).all()) and torch.unique(v).numel() <= 64:
        return {"dist": "randint", "low": int(lo), "high": int(hi) + 1}, "integer values"
    if role != "input":
        b = module_bound(model, name, t)
        if b is not None and max(abs(lo), abs(hi)) <= b * (1 + 1e-6):
            return {"dist": "uniform", "low": -b, "high": b}, "torch default init"
    return fit(v, role, hint, t), "fitted"


def sample(draw, shape, dtype, gen):
    """A tensor drawn from `draw` with torch (the importer's own checks; kforge draws its own bytes)."""
    d = draw["dist"]
    if d == "constant":
        return torch.full(shape, draw["value"], dtype=torch.float64).to(dtype)
    if d == "randint":
        return torch.randint(int(draw["low"]), int(draw["high"]), shape, generator=gen, dtype=torch.int64).to(dtype)
    # float64 only for a float64 tensor: twice the work (a large model's state is drawn several times)
    work = torch.float64 if dtype == torch.float64 else torch.float32
    if d == "uniform":
        u = torch.rand(shape, generator=gen, dtype=work)
        return (draw["low"] + (draw["high"] - draw["low"]) * u).to(dtype)
    z = torch.randn(shape, generator=gen, dtype=work).clamp(-NORMAL_BOUND, NORMAL_BOUND)
    return (draw["mean"] + draw["std"] * z).to(dtype)
