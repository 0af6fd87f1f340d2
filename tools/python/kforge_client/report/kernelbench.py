"""KernelBench's own metrics per level, beside kforge's (issue 29), so that a kforge number can be set
beside a published KernelBench one.

KernelBench (src/kernelbench/score.py, scripts/benchmark_eval_analysis.py) scores a level as
fast_p = (problems whose kernel is correct and faster than eager by more than p) / (problems of the
level), for p in 0, 0.5, 0.8, 1.0 and 1.5, 2.0 (fast_0 is the correctness rate), and the geometric
mean speedup over the correct ones. Here:
- a problem is a task of that level: one the run played, or one the server left out of its level
  (skipped by the import, rejected by the GPU stage or the input checks): a left-out problem counts
  as not solved, in the denominator, as a problem a model fails counts in KernelBench's;
- with several seeds, a task scores the share of its judged episodes that pass (KernelBench's one
  sample per problem is one seed);
- the speedup is kforge's measured one over eager (the reward's evidence: interleaved, L2 flushed,
  median; KernelBench's harness times the mean of 100 calls: tools/bench/kernelbench_timing.py sets the
  two side by side).
Only judged episodes count; a level none of whose episodes was judged is not reported.
"""
import math
from typing import Any

KB_FAST_P = (0.0, 0.5, 0.8, 1.0, 1.5, 2.0)  # KernelBench's thresholds (benchmark_eval_analysis.py's p_values)


def kernelbench_levels(run, left_out) -> list[dict[str, Any]] | None:
    """Per level, in level order: {level, problems, played_tasks, left_out, fast_p: {p: value},
    geomean_speedup_correct (None without a correct one), correct_episodes}; None when no judged
    episode has a level. `left_out` is the run's environment()["left_out"] (None: unknown, counted 0)."""
    by_level: dict[int, dict[str, list[dict[str, Any]]]] = {}
    for e in run.judged:
        if e.get("level") is not None:
            by_level.setdefault(e["level"], {}).setdefault(e["task"], []).append(e)
    if not by_level:
        return None
    left = {}
    for x in left_out or []:
        if x.get("level") is not None:
            left[x["level"]] = left.get(x["level"], 0) + x["rows"]
    out = []
    for level, tasks in sorted(by_level.items()):  # a level with nothing judged has no score to give it
        problems = len(tasks) + left.get(level, 0)
        fast = {}
        for p in KB_FAST_P:
            solved = sum(sum(bool(e["correct"] and e["speedup_eager"] is not None and e["speedup_eager"] > p)
                             for e in eps) / len(eps) for eps in tasks.values())
            fast[f"{p:g}"] = solved / problems
        speedups = [e["speedup_eager"] for eps in tasks.values() for e in eps
                    if e["correct"] and e["speedup_eager"] is not None and e["speedup_eager"] > 0]
        out.append({"level": level, "problems": problems, "played_tasks": len(tasks), "left_out": left.get(level, 0),
                    "fast_p": fast, "correct_episodes": len(speedups),
                    "geomean_speedup_correct": math.exp(sum(map(math.log, speedups)) / len(speedups)) if speedups else None})
    return out


def kernelbench_table(levels, esc) -> list[str]:
    """report.md's lines for kernelbench_levels' result ([] for None)."""
    if not levels:
        return []
    ps = [f"{p:g}" for p in KB_FAST_P]
    lines = ["### KernelBench's own metrics per level", "",
             "KernelBench's fast_p (correct and faster than eager by more than p, over every problem of the level); "
             "the problems the server left out of a level (skipped by the import, rejected by the GPU stage or the "
             "input checks) count as not solved. The speedup is kforge's (interleaved, L2 flushed, median).", "",
             "| level | problems | of them left out | " + " | ".join(f"fast_{p}" for p in ps) +
             " | geomean speedup, correct only |",
             "| --- | --- | --- | " + " | ".join("---" for _ in ps) + " | --- |"]
    for lv in levels:
        g = lv["geomean_speedup_correct"]
        lines.append(f"| {esc(lv['level'])} | {lv['problems']} | {lv['left_out']} | " +
                     " | ".join(f"{lv['fast_p'][p]:.3f}" for p in ps) + f" | {f'{g:.3f}x' if g is not None else '–'} |")
    return lines + [""]
