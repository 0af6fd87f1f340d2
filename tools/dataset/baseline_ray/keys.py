"""The key of a set of baselines: the GPU model, the torch version and the CUDA version they were
measured with, as the stage records them in each row's `env` (synth_gpu/torch_env.py's
`environment`). One folder per key under the driver's `--out`: `<gpu slug>__torch-<v>__cuda-<v>`,
holding the stage's part files (`part-*.jsonl`) as the stage writes them."""
import os
import re

SEP = "__"


def slug(text, limit=64):
    """Lower case, runs of anything but letters, digits, '.' and '-' as one '-' ("NVIDIA H200" ->
    "nvidia-h200", "2.5.1+cu124" -> "2.5.1-cu124")."""
    s = re.sub(r"[^a-z0-9.]+", "-", str(text).lower()).strip("-.")
    return (s[:limit].rstrip("-.") or "unknown")


def key_of(env):
    """The folder name of the baselines measured in this environment (a row's `env`, or the probe's)."""
    return (f"{slug(env.get('gpu') or 'unknown')}{SEP}torch-{slug(env.get('torch') or 'none')}"
            f"{SEP}cuda-{slug(env.get('cuda') or 'none')}")


def is_key(name):
    return SEP + "torch-" in name and SEP + "cuda-" in name


def key_dirs(out):
    """The key folders under `out` that hold part files, in name order."""
    if not os.path.isdir(out):
        return []
    return sorted(n for n in os.listdir(out) if is_key(n) and os.path.isdir(os.path.join(out, n))
                  and any(f.startswith("part-") and f.endswith(".jsonl") for f in os.listdir(os.path.join(out, n))))
