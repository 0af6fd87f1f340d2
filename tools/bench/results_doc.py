"""The results record every benchmark writes (ARCHITECTURE.md, "Tests and benchmarks"): gpu, driver, cuda,
torch, date, commit, command, and `figures` mapping snake_case names to finite numbers (anything else a
record keeps goes under other keys, e.g. `details`). One place knows that shape: the tools write through
`write`, and the CI test `python.results_json` checks every stored record with `problems`."""
import json
import math
import os
import re
import subprocess
import sys

KEYS = ("gpu", "driver", "cuda", "torch", "date", "commit", "command", "figures")
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def problems(doc):
    """What keeps `doc` from the shape, one line each ([] when it has it)."""
    out = [f"no '{k}'" for k in KEYS if k not in doc]
    figures = doc.get("figures")
    if not isinstance(figures, dict) or not figures:
        return out + ["'figures' is not a non-empty object"]
    for name, v in figures.items():
        if not re.fullmatch(r"[a-z][a-z0-9_]*", name):
            out.append(f"figure '{name}' is not snake_case")
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            out.append(f"figure '{name}' is not a finite number: {v!r:.60}")
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}.*", str(doc.get("date", ""))):
        out.append(f"date '{doc.get('date')}' does not start YYYY-MM-DD")
    return out


def commit():
    """The commit a record is of: $KFORGE_COMMIT where set (a GPU host's checkout has a stale HEAD),
    else this checkout's short HEAD, else ""."""
    if os.environ.get("KFORGE_COMMIT"):
        return os.environ["KFORGE_COMMIT"]
    try:
        return subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def host():
    """The record's gpu, driver, cuda and torch for this host: nvidia-smi's first GPU and driver (gpu
    "none (CPU run)" and driver None without one) and this interpreter's torch (None without it),
    asked in child processes so that the caller need not import torch."""
    def sh(cmd):
        try:
            return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=30).stdout.strip() or None
        except (OSError, subprocess.SubprocessError):
            return None
    return {"gpu": sh("nvidia-smi --query-gpu=name --format=csv,noheader | head -1") or "none (CPU run)",
            "driver": sh("nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1"),
            "cuda": sh(f"{sys.executable} -c 'import torch; print(torch.version.cuda)'"),
            "torch": sh(f"{sys.executable} -c 'import torch; print(torch.__version__)'")}


def write(path, doc, who):
    """Writes `doc` to `path` (its folder made), says so, and says on stderr what keeps it from the
    shape: the record is written all the same, so no measurement is lost. True when it has the shape."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(f"{who}: wrote {path}")
    bad = problems(doc)
    for p in bad:
        print(f"{who}: {path} is not in the results shape: {p}", file=sys.stderr)
    return not bad
