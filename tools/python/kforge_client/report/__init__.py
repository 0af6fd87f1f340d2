"""The checkpoint evaluation report of kforge-evaluate's JSONL results: CUDA Agent's Table 1
metrics and KernelBench's fast_p, overall and per group, with bootstrap intervals over tasks; two
runs compared pair by pair; PNG plots, report.md and report.json (tools/python/README.md, Report).

    python -m kforge_client.report RESULTS.jsonl [B.jsonl ...] --out DIR

(or ``kforge report ...``). The metrics need only numpy; the plots need matplotlib (the extra
``report``).
"""
from .build import SCHEMA, build, write_report
from .compare import flips, paired
from .metrics import FAST_P, episode_metrics
from .rows import Run, episode, load_runs, read_jsonl

__all__ = ["SCHEMA", "FAST_P", "Run", "build", "episode", "flips", "load_runs", "episode_metrics", "paired", "read_jsonl",
           "write_report"]
