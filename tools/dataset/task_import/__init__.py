"""Imports KernelBench-format modules and CUDA-Agent-Ops rows as kforge tasks with a TorchScript
reference (the contract: data_synth/task/TASK_FORMAT.md, "Imported tasks"; usage: README.md here).

    PYTHONPATH=tools/dataset $KFORGE_PYTHON_BIN -m task_import --format kernelbench|cuda-agent --out DIR
        [--tolerance kforge|cuda-agent] [--split train|heldout] [--seed N] [--limit N] [--level L]
        [--max-bytes B] [--timeout-s S] PATH...

Writes DIR/tasks/<id>.yaml, DIR/skipped.jsonl, DIR/import_summary.json (and DIR/imported.jsonl:
one line of notes per task written). The modules, by concern:
  sources   the modules to import: KernelBench files and folders, CUDA-Agent JSONL / parquet rows
  loading   the static custom-CUDA check, exec in a fresh namespace under a time limit, seeding
  running   calling a model with its state replaced by given tensors; outputs; comparisons
  classify  the checks that decide import or skip (one reason code each)
  draws     the draw (kforge's grammar) fitted to each argument, and sampling it with torch
  artifact  the traced wrapper, its verification, sha256 and base64
  cost      flops (FlopCounterMode, extended) and min_bytes
  task_yaml the task file
  cli       the command line and the run over all modules
"""
from .common import REASONS, Skip  # noqa: F401


def main(argv=None):
    from .cli import main as cli_main
    return cli_main(argv)
