"""The report's metrics over judged episodes, and their percentile-bootstrap intervals over tasks.

Every metric is a ratio of sums over episodes, so a bootstrap resample (tasks drawn with
replacement, each bringing all its seeds) is a weighted sum: one multinomial draw of task counts
per resample, every metric computed from the same draws. The definitions are in
tools/python/README.md, Report.
"""
import math
from typing import Any

import numpy as np

FAST_P = (0.0, 0.5, 1.0, 1.5, 2.0)
RATES = ("pass_rate", "general_rate", "faster_than_eager_rate", "faster_than_compile_rate", "cheat_rate")
GEOMEANS = ("geomean_speedup_eager", "geomean_speedup_eager_last", "geomean_speedup_compile",
            "geomean_speedup_eager_correct", "geomean_speedup_compile_correct")
DEFAULT_B = 1000
DEFAULT_SEED = 0
CONFIDENCE = 0.95


def fast_key(p) -> str:
    return f"fast_{p:g}"


def metric_names() -> list[str]:
    return list(RATES) + [fast_key(p) for p in FAST_P] + list(GEOMEANS)


def _columns(episodes):
    """Per-episode numerators and denominators: {metric: (numerator array, denominator array)};
    geometric means as sums of logarithms over counts."""
    correct = np.array([e["correct"] for e in episodes], dtype=float)
    ones = np.ones(len(episodes))
    se = np.array([e["speedup_eager"] or 0.0 for e in episodes])
    sc = np.array([e["speedup_compile"] or 0.0 for e in episodes])
    cols = {
        "pass_rate": (correct, ones),
        "faster_than_eager_rate": (np.array([e["beats_eager"] for e in episodes], dtype=float), ones),
        "faster_than_compile_rate": (np.array([e["beats_compile"] for e in episodes], dtype=float), ones),
        "cheat_rate": (np.array([e["verdict"] == "cheat" for e in episodes], dtype=float), ones),
        # Of the correct submissions whose task has other shapes (and that were tried there): right at
        # every one of them (the report's shapes "general"), not only at the task's own.
        "general_rate": (np.array([e["shapes"] == "general" for e in episodes], dtype=float),
                         np.array([e["correct"] and e["shapes"] in ("general", "not_general") for e in episodes], dtype=float)),
    }
    for p in FAST_P:
        # fast_0 is the correctness rate (a correct submission left untimed counts there only).
        cols[fast_key(p)] = (correct if p == 0 else ((se > p) & (correct > 0)).astype(float), ones)
    log_e = np.log(np.where(se > 0, se, 1.0))
    log_c = np.log(np.where(sc > 0, sc, 1.0))
    # Over every judged episode: a failed or untimed one counts as speedup 1 (log 0): the caller
    # keeps the baseline it had. Over the correct ones only (KernelBench): those with a speedup.
    cols["geomean_speedup_eager"] = (log_e, ones)
    # The submission's own (last version's) speedup where the reward came from a better verified
    # version (history.reward_from: best_verified); the same as the above otherwise.
    sl = np.array([e["speedup_eager_last"] or 0.0 for e in episodes])
    cols["geomean_speedup_eager_last"] = (np.log(np.where(sl > 0, sl, 1.0)), ones)
    cols["geomean_speedup_eager_correct"] = (log_e, (se > 0).astype(float))
    compile_known = np.array([e["compile_baseline"] or not e["correct"] for e in episodes], dtype=float)
    cols["geomean_speedup_compile"] = (log_c, compile_known)  # tasks with no torch.compile baseline left out
    cols["geomean_speedup_compile_correct"] = (log_c, (sc > 0).astype(float))
    return cols


def _finish(name, num, den):
    """The metric from summed numerator and denominator (arrays broadcast); NaN where den is 0."""
    with np.errstate(invalid="ignore", divide="ignore"):
        v = np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)
    return np.exp(v) if name in GEOMEANS else v


def task_sums(episodes, tasks) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """{metric: (T-vector of numerator sums, T-vector of denominator sums)} per task, in `tasks` order."""
    index = {t: i for i, t in enumerate(tasks)}
    at = np.array([index[e["task"]] for e in episodes], dtype=int)
    out = {}
    for name, (num, den) in _columns(episodes).items():
        out[name] = (np.bincount(at, num, len(tasks)), np.bincount(at, den, len(tasks)))
    return out


def task_weights(n_tasks, resamples, seed) -> np.ndarray:
    """(resamples, n_tasks) multinomial counts: how often each task is drawn in each resample."""
    rng = np.random.default_rng(seed)
    return rng.multinomial(n_tasks, np.full(n_tasks, 1.0 / n_tasks), size=resamples).astype(float)


def interval(samples, confidence=CONFIDENCE) -> tuple[float, float] | tuple[None, None]:
    """The percentile interval of the finite bootstrap values, or (None, None)."""
    s = samples[np.isfinite(samples)]
    if s.size == 0:
        return None, None
    a = (1 - confidence) / 2
    lo, hi = np.percentile(s, [100 * a, 100 * (1 - a)])
    return float(lo), float(hi)


def _num(x):
    return None if x is None or not math.isfinite(x) else float(x)


def episode_metrics(episodes, resamples=DEFAULT_B, seed=DEFAULT_SEED, confidence=CONFIDENCE) -> dict[str, Any]:
    """Every metric over the episodes with its bootstrap interval over tasks:
    {episodes, tasks, metrics: {name: {value, lo, hi, n}}}; values None where undefined."""
    tasks = sorted({e["task"] for e in episodes})
    out = {"episodes": len(episodes), "tasks": len(tasks), "metrics": {}}
    if not episodes:
        out["metrics"] = {m: {"value": None, "lo": None, "hi": None, "n": 0} for m in metric_names()}
        return out
    sums = task_sums(episodes, tasks)
    w = task_weights(len(tasks), resamples, seed) if resamples > 0 else None
    for name in metric_names():
        num, den = sums[name]
        value = _finish(name, num.sum(), den.sum())
        lo = hi = None
        if w is not None:
            lo, hi = interval(_finish(name, w @ num, w @ den), confidence)
        out["metrics"][name] = {"value": _num(float(value)), "lo": lo, "hi": hi, "n": int(round(den.sum()))}
    return out


def verdict_counts(episodes) -> dict[str, int]:
    counts = {}
    for e in episodes:
        k = e["verdict"] or "none"
        counts[k] = counts.get(k, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: -kv[1]))


def grouped(episodes, grouping, **kw) -> dict[str, dict[str, Any]]:
    """metrics() per group of the grouping (rows.GROUPINGS), groups in sorted order."""
    groups = {}
    for e in episodes:
        groups.setdefault(e["groups"][grouping], []).append(e)
    return {g: episode_metrics(es, **kw) for g, es in sorted(groups.items())}


def fast_p_curve(episodes, ps) -> list[float | None]:
    """fast_p at each p of ps (the plot's curve): correct with speedup over eager > p, over all episodes."""
    if not episodes:
        return [None for _ in ps]
    se = np.array([e["speedup_eager"] or 0.0 for e in episodes])
    correct = np.array([e["correct"] for e in episodes])
    return [float(correct.mean()) if p == 0 else float(((se > p) & correct).mean()) for p in ps]
