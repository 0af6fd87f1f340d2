#!/usr/bin/env python3
"""The GPU stage over every GPU of a Ray cluster (issue 32, the engine of `kforge baseline`): the entry
point of the package tools/dataset/baseline_ray/ (whose docstring and tools/dataset/SYNTH_GPU.md,
"Baselines on a Ray cluster", say what it does). Run it with the project's Python (tools/python_env.sh):
`"$KFORGE_PYTHON_BIN" tools/dataset/baseline_ray.py DATASET --out DIR [--address ADDR] ...`."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from baseline_ray import main  # noqa: E402  (the package beside this file)

if __name__ == "__main__":
    sys.exit(main())
