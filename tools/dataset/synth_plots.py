#!/usr/bin/env python3
"""PNG plots of a `kforge synth` summary: rejections per filter, operators per task, estimated eager
runtime; and, once tools/dataset/synth_gpu.py --merge has added the GPU stage, its rejections, the measured
eager runtime and the torch.compile speedup, with operators per task counted over the tasks it kept.
Uses matplotlib when installed (tools/setup.sh installs it); otherwise says so and exits 0.

    tools/dataset/synth_plots.py DIR/summary.json [--out DIR]
"""
import argparse
import json
import os
import sys


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("summary")
    ap.add_argument("--out", default=None, help="folder for the PNGs (default: beside the summary)")
    a = ap.parse_args(argv)
    with open(a.summary) as f:
        s = json.load(f)
    out = a.out or os.path.dirname(os.path.abspath(a.summary))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("synth_plots: matplotlib is not installed; no plots written")
        return 0
    figures = {
        "rejections.png": ("candidates rejected per filter (of %d drawn)" % s["drawn"], s["rejected"]),
        "ops_per_task.png": ("operators per kept task", s["ops_per_task"]),
        "est_runtime.png": ("estimated eager runtime, ms (H200 ceilings)", s["est_runtime_ms"]),
    }
    g = s.get("gpu")  # written by tools/dataset/synth_gpu.py --merge
    if g:
        figures["gpu_rejections.png"] = ("GPU stage: rejected per filter (of %d measured; %d kept)" % (g["measured"], g["kept"]),
                                         g["rejected"])
        figures["eager_runtime.png"] = ("measured eager runtime, ms (%s)" % g.get("gpu", ""), g["eager_runtime_ms"])
        figures["compile_speedup.png"] = ("torch.compile speedup over eager (eager ms / compiled ms)", g["compile_speedup"])
        if g.get("kept_ops_per_task"):  # the shipped tasks: those the GPU stage kept
            figures["ops_per_task.png"] = ("operators per task (the %d kept after the GPU stage)" % g["kept"],
                                           g["kept_ops_per_task"])
    written = []
    for name, (title, counts) in figures.items():
        fig, ax = plt.subplots(figsize=(8, 4))
        ax.bar(list(counts.keys()), list(counts.values()))
        ax.set_title(title)
        ax.tick_params(axis="x", rotation=45)
        fig.tight_layout()
        path = os.path.join(out, name)
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)
    print("synth_plots: wrote " + ", ".join(written))
    return 0


if __name__ == "__main__":
    sys.exit(main())
