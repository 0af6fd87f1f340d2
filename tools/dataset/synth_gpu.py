#!/usr/bin/env python3
"""The GPU stage of the synthesizer: the entry point of the package tools/dataset/synth_gpu/ (whose
docstring and tools/dataset/SYNTH_GPU.md say what it does). Run it with the project's Python
(tools/python_env.sh): `"$KFORGE_PYTHON_BIN" tools/dataset/synth_gpu.py DIR/dataset.h5 --shard k/N ...`."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from synth_gpu import main  # noqa: E402  (the package beside this file)

if __name__ == "__main__":
    sys.exit(main())
