"""tools/bench/audit_record.py reads an exploit's `expected` as the audit test does
(tests/anticheat/audit_gpu_test.cpp): "refused", a verdict, "verdict (check)", and
"verdict (check or check)" where one guarantee catches an exploit in either phase."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tools", "bench"))
from audit_record import refused_as_expected, unprofitable_as_expected  # noqa: E402


def entry(expected, verdict, check):
    return {"expected": expected, "verdict": verdict, "check": check}


def test_either_check_of_an_or_expectation_counts_and_no_other():
    exp = "cheat (robustness_draws or timed_calls_verified)"
    assert refused_as_expected(entry(exp, "cheat", "robustness_draws"))
    assert refused_as_expected(entry(exp, "cheat", "timed_calls_verified"))
    assert not refused_as_expected(entry(exp, "cheat", "static"))
    assert not refused_as_expected(entry(exp, "fail", "robustness_draws"))


def test_single_check_verdict_and_refused():
    assert refused_as_expected(entry("cheat (static)", "cheat", "static"))
    assert not refused_as_expected(entry("cheat (static)", "cheat", "inputs_unchanged"))
    assert refused_as_expected(entry("fail", "fail", "verify"))
    assert refused_as_expected(entry("refused", "cheat", "static")) and not refused_as_expected(entry("refused", "pass", ""))
    assert not refused_as_expected(entry("unprofitable", "pass", ""))  # its speed is the audit test's to judge


def test_an_unprofitable_exploit_is_as_expected_when_refused_or_its_shortcut_went_unpaid():
    assert unprofitable_as_expected(entry("unprofitable", "cheat", "speed_of_light"))
    assert unprofitable_as_expected(entry("unprofitable", "pass", "1.91x (shifted); fastest 9.29x"))
    assert not unprofitable_as_expected(entry("unprofitable", "pass", "1.91x (shifted); fastest 2.00x"))  # no shortcut seen
    assert not unprofitable_as_expected(entry("unprofitable", "pass", ""))
    assert not unprofitable_as_expected(entry("cheat (static)", "cheat", "static"))
