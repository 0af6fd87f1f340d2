"""Helpers for the Python tests: run the kforge binary and read what `kforge task dump` writes."""
import json
import os
import struct
import subprocess

import torch

KFORGE = os.environ.get("KFORGE_BIN", "kforge")
SOURCE_DIR = os.environ.get("KFORGE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))

_DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "I32": torch.int32,
           "I64": torch.int64, "BOOL": torch.bool}


def read_safetensors(path):
    """Returns (ordered list of (name, tensor), metadata) keeping the file's order."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n], object_pairs_hook=list)
    base = 8 + n
    tensors, meta = [], {}
    for name, info in header:
        if name == "__metadata__":
            meta = dict(info)
            continue
        info = dict(info)
        start, end = info["data_offsets"]
        buf = bytearray(data[base + start:base + end])
        t = torch.frombuffer(buf, dtype=_DTYPES[info["dtype"]]) if buf else torch.empty(0, dtype=_DTYPES[info["dtype"]])
        tensors.append((name, t.reshape(info["shape"])))
    return tensors, meta


def run(*args, check=True):
    return subprocess.run([KFORGE, *args], capture_output=True, text=True, check=check)
