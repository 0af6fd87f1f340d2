"""The GPU stage of the synthesizer: runs every task of a `kforge synth` dataset on the device,
applies the filters the CPU stages could not, and measures the eager and torch.compile baselines
with one timing method (env/judge/timing.cpp's). Resumable by row; shardable; one JSON line per task.

    python tools/dataset/synth_gpu.py DIR/dataset.h5 --shard k/N [--ids FILE] [--device cuda] [--out DIR/gpu]
           [--limit N] [--time-budget-s S] [--workers W]
    python tools/dataset/synth_gpu.py --merge DIR/dataset.h5 [--out DIR/gpu]
    python tools/dataset/synth_gpu.py DIR/dataset.h5 [--out DIR/gpu] --compare OTHER_DIR

kforge owns the dataset, the task specs, the tolerances and the timing settings: the tasks come from
`kforge tasks export-gpu` (with configs/synth.yaml's window, informative fraction and
baseline_timing), the results go back through `kforge tasks set-baselines`. tools/dataset/SYNTH_GPU.md has
the whole story and the H200 commands. The modules, by concern:
  common     reasons, input errors, the bridge to kforge
  records    the part files (resume, torn lines)
  torch_env  precision flags, environment, building a task on the device, freeing it
  checks     the probe's output checks; the tolerance rule, applied in one helper
  artifact_check  an imported task's TorchScript artifact against its module at its own size
  timing     the timing method (env/judge/timing.cpp's loop)
  pool       the compile workers and the GPU turn
  run, loops one run: probe, compile, time, records; in rounds or overlapping
  merge      --merge and --compare
  cli        the command line
Importing the package imports no torch (--merge and the drivers' readers stay fast).
"""
from .common import REASONS, InputError, error_line, export_tasks, kforge_bin, percentile, run_kforge  # noqa: F401
from .records import PartWriter, part_files, pick_records, read_records  # noqa: F401


def main(argv=None):
    from .cli import main as cli_main
    return cli_main(argv)
