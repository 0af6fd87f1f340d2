"""The timing statistics exist twice: reward/timing_stats.cpp (the evaluator's reports, `kforge task
run`) and tools/dataset/synth_gpu (the dataset's baselines: common.py's quantile_sorted and mean_std, and
timing.py's stats). Both must give tests/golden/timing_stats.json's numbers exactly; the C++ side
is checked by tests/reward/timing_stats_test.cpp (GoldenVectorsAreReproducedExactly)."""
import json
import os
import sys

import pytest

SOURCE_DIR = os.environ.get("KFORGE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(SOURCE_DIR, "tools", "dataset"))
from synth_gpu.common import percentile  # noqa: E402
from synth_gpu.timing import stats  # noqa: E402

with open(os.path.join(SOURCE_DIR, "tests", "golden", "timing_stats.json")) as f:
    CASES = json.load(f)["cases"]

RECORD_FIELDS = {"median_ms": "median", "mean_ms": "mean", "p10_ms": "p10", "p90_ms": "p90", "min_ms": "min",
                 "max_ms": "max", "n": "n", "rse": "rse"}


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_the_gpu_stage_statistics_equal_the_golden_vectors(case):
    got = stats(list(case["samples"]))
    assert {k: got[k] for k in RECORD_FIELDS} == {k: case[v] for k, v in RECORD_FIELDS.items()}


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_percentile_is_the_same_rule(case):
    """common.percentile, which the merge's summaries use, is the records' quantile."""
    assert [percentile(case["samples"], q) for q in (0.5, 0.1, 0.9)] == [case["median"], case["p10"], case["p90"]]


def test_the_vectors_cover_the_cases_where_rules_part():
    """The file keeps the cases that tell interpolation from nearest rank and the midpoint formula
    (a + b) / 2 from a + (b - a) / 2, so neither change can pass unseen."""
    by_name = {c["name"]: c for c in CASES}
    assert {c["n"] for c in CASES} >= {1, 2, 3, 4, 5, 6, 10, 11}
    outlier = by_name["three_samples_with_an_outlier"]
    assert outlier["p90"] not in outlier["samples"]  # nearest rank would give a sample
    a, b = sorted(by_name["two_samples_where_the_midpoint_formula_matters"]["samples"])
    assert (a + b) / 2 != by_name["two_samples_where_the_midpoint_formula_matters"]["median"]
    assert percentile([], 0.5) is None
