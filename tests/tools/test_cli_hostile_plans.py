"""Hostile launch plans and task files through the command line (issue 26): `kforge eval --check`
on plans whose grid used to kill it (SIGFPE on INT64_MIN / -1, SIGSEGV on 20 000 parentheses or
150 000 nested brackets) reports a typed compile_error naming the line and exits 3, and
`kforge task run` on a task whose size wraps around 64 bits is a spec_error, not an
internal_error with a libtorch backtrace."""
import os
import shutil
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "data_synth"))
from kforge_dump import KFORGE, SOURCE_DIR  # noqa: E402

TILED = os.path.join(SOURCE_DIR, "datasets", "samples", "candidates", "linear_relu", "tiled")
PLAN = "launches:\n  - kernel: linear_relu\n    grid: [\"{grid}\"]\n    block: [256]\n    args: [x, fc.weight, fc.bias, act, M, N, K]\n"


def kforge(*args, timeout=120):
    return subprocess.run([KFORGE, *args], capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def candidate(tmp_path):
    d = tmp_path / "cand"
    d.mkdir()
    shutil.copy(os.path.join(TILED, "kernel.cu"), d / "kernel.cu")
    return d


def check_plan(candidate, plan_text):
    (candidate / "launch.yaml").write_text(plan_text)
    r = kforge("eval", "--task", "linear_relu", "--candidate", str(candidate), "--check")
    assert r.returncode == 3, f"exit {r.returncode} (a negative code is a signal)\n{r.stderr[-2000:]}"
    verdict = [line for line in r.stdout.splitlines() if line.startswith("verdict: ")]
    assert len(verdict) == 1, r.stdout[-2000:]
    return verdict[0]


@pytest.mark.parametrize("grid, says", [
    ("(0 - 9223372036854775807 - 1) / (0 - 1)", "overflows 64 bits (/)"),
    ("(0 - 9223372036854775807 - 1) % (0-1)", "is 0; every grid dimension is at least 1"),
    ("-(0 - 9223372036854775807 - 1)", "overflows 64 bits (negation)"),
    ("(" * 20000 + "1" + ")" * 20000, "longer than the limit of 4096"),
    ("1" + " + 1" * 20000, "longer than the limit of 4096"),
    ("(" * 100 + "1" + ")" * 100, "nested deeper than 64 levels"),
], ids=["int64min_div_minus1", "int64min_mod_minus1", "negate_int64min", "20000_parens", "20000_terms", "100_parens"])
def test_eval_check_reports_a_hostile_grid_as_a_plan_error(candidate, grid, says):
    verdict = check_plan(candidate, PLAN.format(grid=grid))
    assert verdict.startswith("verdict: error (compile_error: launch.yaml:3:12: launches[0].grid[0]: "), verdict[:300]
    assert says in verdict, verdict[:300]


def test_eval_check_refuses_150000_nested_brackets_before_parsing(candidate):
    verdict = check_plan(candidate, "launches: " + "[" * 150000)
    assert "launch.yaml:1:27: flow collections nested deeper than 16 levels" in verdict, verdict[:300]


def test_eval_check_refuses_a_duplicate_key_with_its_line(candidate):
    plan = PLAN.format(grid="1") + "    grid: [2]\n"
    verdict = check_plan(candidate, plan)
    assert "launch.yaml:6:5: duplicate key 'grid' (first at line 3)" in verdict, verdict[:300]


def test_task_run_refuses_a_size_that_wraps_around(tmp_path):
    path = tmp_path / "wrap.yaml"
    path.write_text("kforge_task: 1\nid: wrap\nsource: synth\nsplit: train\nseed: 5\ndtype: float32\n"
                    "dims: {N: 4294967296, M: 4294967296}\ngraph:\n  inputs:\n    - {name: x, shape: [N, M]}\n"
                    "  nodes:\n    - {id: y, op: relu, in: [x]}\n  outputs: [y]\nprovenance: {generator: test, seed: 1}\n")
    r = kforge("task", "run", str(path))
    assert r.returncode == 1, f"exit {r.returncode}\n{r.stderr[-2000:]}"
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("kforge: spec_error: "), last
    assert "has more elements than a 64-bit count holds" in last, last
    assert "internal" not in r.stderr
