"""Two runs on the same tasks: paired differences with a paired bootstrap, and the tasks that flipped.

Episodes are matched by (task, seed) and kept where both runs judged them. The paired bootstrap
draws tasks with replacement once per resample and computes both runs' metrics on the same draw,
so the interval of B - A reflects the task-to-task spread of the difference, not of each run.
"""
from typing import Any

import numpy as np

from . import metrics as M


def paired(run_a, run_b, resamples=M.DEFAULT_B, seed=M.DEFAULT_SEED, confidence=M.CONFIDENCE) -> dict[str, Any]:
    a_by, b_by = run_a.by_key(), run_b.by_key()
    keys = sorted(set(a_by) & set(b_by), key=lambda k: (k[0], str(k[1])))
    ea, eb = [a_by[k] for k in keys], [b_by[k] for k in keys]
    out = {"a": run_a.name, "b": run_b.name, "pairs": len(keys), "tasks": len({k[0] for k in keys}),
           "only_in_a": len(set(a_by) - set(b_by)), "only_in_b": len(set(b_by) - set(a_by)),
           "metrics": {}, "flipped": flips(ea, eb)}
    if not keys:
        return out
    tasks = sorted({k[0] for k in keys})
    sa, sb = M.task_sums(ea, tasks), M.task_sums(eb, tasks)
    w = M.task_weights(len(tasks), resamples, seed) if resamples > 0 else None
    for name in M.metric_names():
        va = float(M._finish(name, sa[name][0].sum(), sa[name][1].sum()))
        vb = float(M._finish(name, sb[name][0].sum(), sb[name][1].sum()))
        entry = {"a": M._num(va), "b": M._num(vb), "diff": M._num(vb - va), "diff_lo": None, "diff_hi": None}
        if w is not None:
            ba = M._finish(name, w @ sa[name][0], w @ sa[name][1])
            bb = M._finish(name, w @ sb[name][0], w @ sb[name][1])
            entry["diff_lo"], entry["diff_hi"] = M.interval(bb - ba, confidence)
            if name in M.GEOMEANS:  # a ratio of geometric means reads better than their difference
                with np.errstate(invalid="ignore", divide="ignore"):
                    entry["ratio"] = M._num(vb / va) if va else None
                    entry["ratio_lo"], entry["ratio_hi"] = M.interval(bb / ba, confidence)
        out["metrics"][name] = entry
    return out


def _fast1(e):
    return bool(e["correct"] and e["speedup_eager"] is not None and e["speedup_eager"] > 1.0)


def flips(ea, eb) -> dict[str, list[dict[str, Any]]]:
    """Pairs whose outcome changed from A to B: correct -> not, not -> correct, and the speedup over
    eager crossing 1x (fast_1) either way; each a list of {task, seed, a, b} (speedups over eager)."""
    out = {"pass_to_fail": [], "fail_to_pass": [], "crossed_1x_up": [], "crossed_1x_down": []}
    for a, b in zip(ea, eb):
        item = {"task": a["task"], "seed": a["seed"], "a": a["speedup_eager"], "b": b["speedup_eager"],
                "a_verdict": a["verdict"], "b_verdict": b["verdict"]}
        if a["correct"] and not b["correct"]:
            out["pass_to_fail"].append(item)
        if b["correct"] and not a["correct"]:
            out["fail_to_pass"].append(item)
        if _fast1(b) and not _fast1(a):
            out["crossed_1x_up"].append(item)
        if _fast1(a) and not _fast1(b):
            out["crossed_1x_down"].append(item)
    return out
