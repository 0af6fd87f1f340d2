"""The GPU stage of the synthesizer (tools/dataset/synth_gpu/) over every GPU of a Ray cluster: the
engine of `kforge baseline` (issue 32). One timing process per GPU (a Ray actor that reserves one
GPU, or one unit of a custom resource on a CPU-only cluster, and its share of the node's CPUs for the
stage's compile workers), the dataset's rows handed out by task id, the rows collected as they are
written into part files keyed by GPU model, torch and CUDA version, and a merge per key through the
stage's `--merge` (`kforge tasks set-baselines`).

    "$KFORGE_PYTHON_BIN" tools/dataset/baseline_ray.py DATASET --out DIR [--address ADDR] [--gpus-per-node N]
        [--device cuda|cpu] [--resource NAME] [--ids FILE] [--limit N] [--time-budget-s S] [-- STAGE ARGS...]
    "$KFORGE_PYTHON_BIN" tools/dataset/baseline_ray.py DATASET --out DIR --merge [--key KEY] [--into FILE]

tools/dataset/SYNTH_GPU.md ("Baselines on a Ray cluster") has the whole story. The modules:
  keys    the key of a GPU model, torch and CUDA version, and the folders named by it
  worker  the Ray actor on a node: one stage process at a time, its rows read back as they are written
  driver  placement, the id queue, collection into part files, progress and the summary
  cli     the command line, and --merge per key
Importing the package imports neither Ray nor torch.
"""


def main(argv=None):
    from .cli import main as cli_main
    return cli_main(argv)
