"""Every benchmark and GPU-test record under tools/bench/results/ has the shape ARCHITECTURE.md ("Tests and
benchmarks") gives them: gpu, driver, cuda, torch, date, commit, command, and `figures` mapping
snake_case names to finite numbers (anything else a record keeps goes under other keys)."""
import glob
import json
import os
import sys

import pytest

SOURCE_DIR = os.environ.get("KFORGE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(SOURCE_DIR, "tools", "bench"))
from results_doc import KEYS, problems, write  # noqa: E402

FILES = sorted(glob.glob(os.path.join(SOURCE_DIR, "tools", "bench", "results", "*.json")))


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


def test_write_keeps_a_record_off_the_shape_and_says_why(tmp_path, capsys):
    good = {k: "x" for k in KEYS}
    good.update(date="2026-11-30", figures={"a_ms": 1.5})
    assert write(tmp_path / "sub" / "good.json", good, "t")
    assert json.loads((tmp_path / "sub" / "good.json").read_text()) == good
    bad = dict(good, figures={"a_ms": None})
    assert not write(tmp_path / "bad.json", bad, "t")
    err = capsys.readouterr().err
    assert "bad.json is not in the results shape: figure 'a_ms' is not a finite number" in err
    assert json.loads((tmp_path / "bad.json").read_text()) == bad  # written all the same
