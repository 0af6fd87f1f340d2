"""Every benchmark and GPU-test record under tools/bench/results/ has the shape DESIGN.md ("Tests and
benchmarks") gives them: gpu, driver, cuda, torch, date, commit, command, and `figures` mapping
snake_case names to finite numbers (anything else a record keeps goes under other keys)."""
import glob
import json
import math
import os
import re

import pytest

SOURCE_DIR = os.environ.get("KFORGE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
FILES = sorted(glob.glob(os.path.join(SOURCE_DIR, "tools", "bench", "results", "*.json")))
KEYS = ("gpu", "driver", "cuda", "torch", "date", "commit", "command", "figures")


def problems(doc):
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


def test_there_are_records():
    assert len(FILES) >= 10, FILES


@pytest.mark.parametrize("path", FILES, ids=[os.path.basename(p) for p in FILES])
def test_record_has_the_shape(path):
    with open(path) as f:
        doc = json.load(f)
    assert problems(doc) == []


def test_the_check_catches_what_it_should():
    good = {k: "x" for k in KEYS}
    good.update(date="2026-11-30", figures={"verify_overhead_ms_p50": 4.1})
    assert problems(good) == []
    assert problems(dict(good, figures={"status": {"ok": 3}})) == ["figure 'status' is not a finite number: {'ok': 3}"]
    assert problems(dict(good, figures={"Rows": 1})) == ["figure 'Rows' is not snake_case"]
    assert problems(dict(good, figures={"x_ms": float("nan")}))[0].startswith("figure 'x_ms' is not a finite")
    assert problems(dict(good, figures={"ok_count": True}))[0].startswith("figure 'ok_count' is not a finite")
    assert "no 'commit'" in problems({k: v for k, v in good.items() if k != "commit"})
