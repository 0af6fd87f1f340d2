"""The timing method a record states, as fields, so two records can be held to one method.

Three writers state it in one line: env/judge/timing.cpp (`method_text`: `kforge task run`, the
evaluator), tools/dataset/synth_gpu/timing.py (`Timer.method`: the dataset's baselines) and that tool
before it became a package (the shipped baselines of datasets/synth/). parse() reads any of them
into the fields of METHOD_FIELDS; differences() names every field on which two records, or a
record and the settings both should use (configs/synth.yaml's baseline_timing as kforge reads it),
disagree. A line none of the writers would write is an error, not a silent pass.

  flush:      l2_flush ("write": factor x L2 written before each call, "rmw": read-modify-write,
              "none"), flush_mib, persisting_l2_reset
  call order: clock ("cuda-events": each call between its own events, flushed before it; "host": a
              host clock per call); interleaved, not compared: how many functions were timed call
              by call (the baselines time eager and torch.compile, `kforge task run` the reference
              alone)
  warm-up:    warmup_count, warmup_ms
  stopping:   min_reps, max_reps, target_rse, budget_ms, stop_rule
"""
import math
import re

FLUSH = ("l2_flush", "flush_mib", "persisting_l2_reset")
ORDER = ("clock",)
WARMUP = ("warmup_count", "warmup_ms")
STOPPING = ("min_reps", "max_reps", "target_rse", "budget_ms", "stop_rule")
METHOD_FIELDS = FLUSH + ORDER + WARMUP + STOPPING
# The fields a method takes from the timing settings (configs' `timing` / `baseline_timing`).
SETTINGS_FIELDS = WARMUP + ("min_reps", "max_reps", "target_rse", "budget_ms")

NUM = r"([0-9.eE+-]+)"
# "... median of n until rse < 1% (n >= 10) or 3000 ms or n = 100": both loops of today.
STOP_NOW = re.compile(r"median of n until rse < " + NUM + r"% \(n >= (\d+)\) or " + NUM + r" ms or n = (\d+)")
# "median of n in [10, 100], stop at RSE <= 0.01 (or 3 s)": the tool before the package.
STOP_OLD = re.compile(r"median of n in \[(\d+), (\d+)\], stop at RSE <= " + NUM + r" \(or " + NUM + r" s\)")
WARM_CPP = re.compile(r"(\d+) warm-up calls \(>= (\d+) and >= " + NUM + r" ms\)")
WARM_PY = re.compile(r"warm-up rounds >= (\d+) and >= " + NUM + r" ms")
WARM_OLD = re.compile(r"warm-up >= (\d+) calls and >= " + NUM + r" ms")


class MethodError(ValueError):
    pass


def _warmup(text):
    for rx, base in ((WARM_CPP, 2), (WARM_PY, 1), (WARM_OLD, 1)):
        m = rx.search(text)
        if m:
            return {"warmup_count": int(m.group(base)), "warmup_ms": float(m.group(base + 1))}
    raise MethodError(f"no warm-up rule in the method: {text!r}")


def _stopping(text):
    m = STOP_NOW.search(text)
    if m:
        return {"target_rse": float(m.group(1)) / 100, "min_reps": int(m.group(2)), "budget_ms": float(m.group(3)),
                "max_reps": int(m.group(4)), "stop_rule": "rse < target after min_reps, or budget, or max_reps"}
    m = STOP_OLD.search(text)
    if m:
        return {"min_reps": int(m.group(1)), "max_reps": int(m.group(2)), "target_rse": float(m.group(3)),
                "budget_ms": float(m.group(4)) * 1e3, "stop_rule": "rse <= target after min_reps, or budget, or max_reps"}
    raise MethodError(f"no stopping rule in the method: {text!r}")


def _flush_and_clock(text):
    if text.startswith("cuda-events per call on the current stream; "):  # today's two loops on CUDA
        out = {"clock": "cuda-events"}
        m = re.search(r"L2 flushed \((\d+) MiB written(?:, [0-9.]+x L2)?\) and persisting L2 (NOT )?reset", text)
        if m:
            out.update(l2_flush="write", flush_mib=int(m.group(1)), persisting_l2_reset=not m.group(2))
        elif "; no L2 flush; " in text:
            out.update(l2_flush="none", flush_mib=0, persisting_l2_reset=False)
        else:
            raise MethodError(f"no L2 flush statement in the method: {text!r}")
        return out
    if text.startswith("CUDA events per call; "):  # the tool before the package
        m = re.search(r"L2 flushed before each call \(RMW of (\d+) MiB", text)
        if m:
            return {"clock": "cuda-events", "l2_flush": "rmw", "flush_mib": int(m.group(1)), "persisting_l2_reset": False}
        return {"clock": "cuda-events", "l2_flush": "none", "flush_mib": 0, "persisting_l2_reset": False}
    if text.startswith("steady_clock per call; ") or "host perf_counter per call; NO cache flush" in text:
        return {"clock": "host", "l2_flush": "none", "flush_mib": 0, "persisting_l2_reset": False}
    raise MethodError(f"not a method line any timing loop writes: {text!r}")


def parse(text):
    """The fields of a method line (MethodError for a line no writer writes)."""
    if not isinstance(text, str) or not text:
        raise MethodError("no method recorded")
    out = _flush_and_clock(text)
    out.update(_warmup(text))
    out.update(_stopping(text))
    m = re.search(r"interleaved with (\d+) other function", text)
    out["interleaved"] = int(m.group(1)) + 1 if m else 2 if "interleaved call by call" in text else 1
    return out


def _same(a, b):
    if isinstance(a, float) or isinstance(b, float):
        return a is not None and b is not None and math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def differences(a, b, fields=METHOD_FIELDS, names=("a", "b")):
    """'field: A vs B' for every field of `fields` on which the two parsed methods (or settings) differ."""
    return [f"{k}: {names[0]} {a.get(k)!r} vs {names[1]} {b.get(k)!r}" for k in fields if not _same(a.get(k), b.get(k))]


def settings_fields(timing):
    """The method fields the timing settings fix (a `timing` dict as `kforge tasks export-gpu` gives it)."""
    return {k: timing[k] for k in SETTINGS_FIELDS}


def flag_differences(a, b, names=("a", "b")):
    """The precision flags both records carry, where they differ; TF32 flags missing on either side count."""
    out = [f"{k}: {names[0]} {a.get(k)!r} vs {names[1]} {b.get(k)!r}" for k in sorted(set(a) & set(b)) if a[k] != b[k]]
    for k in ("allow_tf32_cublas", "allow_tf32_cudnn"):
        if k not in a or k not in b:
            out.append(f"{k}: {names[0]} {a.get(k)!r} vs {names[1]} {b.get(k)!r}")
    return out
