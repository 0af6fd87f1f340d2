"""The report as one JSON-able document, and the folder it is written into (report.json,
report.md and the PNG plots beside them)."""
import json
import os
import re
from typing import Any

from . import compare as C
from . import metrics as M
from .kernelbench import kernelbench_levels
from .rows import GROUPINGS, environment, load_runs

SCHEMA = "kforge.report/1"
UNREAD_SHOWN = 5  # unread lines named per file in the report


def run_report(run, resamples=M.DEFAULT_B, seed=M.DEFAULT_SEED, eval_yaml=None) -> dict[str, Any]:
    kw = {"resamples": resamples, "seed": seed}
    env = environment(run, eval_yaml)
    return {
        "name": run.name,
        "models": sorted({str(e["model"]) for e in run.episodes}),
        "episodes": len(run.episodes), "judged": len(run.judged), "unjudged": run.unjudged,
        "errors": len(run.errors), "tasks": len({e["task"] for e in run.episodes}),
        "verdicts": M.verdict_counts(run.judged),
        "environment": env,
        "overall": M.episode_metrics(run.judged, **kw),
        "groups": {g: M.grouped(run.judged, g, **kw) for g in GROUPINGS},
        # KernelBench's fast_p per level over every problem of the level (None: no task has a level)
        "kernelbench": kernelbench_levels(run, env["left_out"]),
    }


def build(runs, resamples=M.DEFAULT_B, seed=M.DEFAULT_SEED, eval_yaml=None) -> dict[str, Any]:
    """{schema, bootstrap, runs: [...], comparisons: [each later run against the first]}."""
    return {
        "schema": SCHEMA,
        "bootstrap": {"method": "percentile bootstrap over tasks (all seeds of a drawn task come with it)",
                      "resamples": resamples, "seed": seed, "confidence": M.CONFIDENCE},
        "fast_p": list(M.FAST_P),
        "runs": [run_report(r, resamples, seed, eval_yaml) for r in runs],
        "comparisons": [C.paired(runs[0], r, resamples, seed) for r in runs[1:]],
    }


def _slug(name):
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "run"


def write_report(paths, out_dir, model=None, resamples=M.DEFAULT_B, seed=M.DEFAULT_SEED, eval_yaml=None) -> dict[str, Any]:
    """Reads the JSONL files, writes out_dir/report.json, report.md and the plots; returns the report."""
    from . import markdown, plots  # matplotlib only when writing

    unread = {}
    runs = load_runs(paths, model=model, unread=unread)
    if not runs:
        raise ValueError("no results files given")
    doc = build(runs, resamples, seed, eval_yaml)
    doc["inputs"] = [os.path.abspath(p) for p in paths]
    # Lines no metric counts because they could not be read as episodes: counted, and the first
    # few named, never dropped silently.
    doc["unread_lines"] = [{"file": os.path.abspath(p), "lines": len(bad), "first": bad[:UNREAD_SHOWN]}
                           for p, bad in unread.items()]
    os.makedirs(out_dir, exist_ok=True)
    slugs = []
    for i, (run, rep) in enumerate(zip(runs, doc["runs"])):
        slug = _slug(run.name)
        if slug in slugs:
            slug = f"{slug}_{i}"
        slugs.append(slug)
        rep["plots"] = {"fast_p": os.path.basename(plots.fast_p_curve(run, os.path.join(out_dir, f"fast_p_{slug}.png"))),
                        "speedups": os.path.basename(plots.speedup_histogram(run, os.path.join(out_dir, f"speedups_{slug}.png")))}
    for i, cmp in enumerate(doc["comparisons"], start=1):
        path = os.path.join(out_dir, f"compare_{slugs[0]}_vs_{slugs[i]}.png")
        cmp["plot"] = os.path.basename(plots.comparison(runs[0], runs[i], path))
    with open(os.path.join(out_dir, "report.json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    with open(os.path.join(out_dir, "report.md"), "w") as f:
        f.write(markdown.render(doc))
    return doc
