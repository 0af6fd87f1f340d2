#!/usr/bin/env python3
"""Turns the anti-cheat audit's JSON (KFORGE_AUDIT_OUT of anticheat_audit_gpu_tests: one entry per
candidate) into a results record (results_doc's shape), with the GPU suite's pass/fail counts.

    tools/bench/audit_record.py AUDIT.json --commit C --command CMD --passed N --failed M OUT.json
        [--gpu NAME --driver D --cuda C --torch T --date YYYY-MM-DD]
"""
import argparse
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import results_doc  # noqa: E402


def refused_as_expected(e):
    """`expected` is "refused", a verdict, "verdict (check)" or "verdict (check or check ...)" (where one
    guarantee catches an exploit in either phase; tests/anticheat/audit_gpu_test.cpp reads it alike).
    An `unprofitable` exploit has no expected check: the audit test judges its speed."""
    exp = e.get("expected", "")
    if exp == "refused":
        return e.get("verdict") != "pass"
    verdict, _, checks = exp.partition(" (")
    checks = [c for c in checks.rstrip(")").split(" or ") if c]
    return e.get("verdict") == verdict and (not checks or e.get("check") in checks)


def unprofitable_as_expected(e):
    """An `unprofitable` exploit as the audit test judges it (unprofitable_failure): refused by any check, or
    passed with its fastest member at least 1.2x its judged speedup, which the test writes as its `check`:
    "1.91x (shifted); fastest 9.29x"."""
    if e.get("expected") != "unprofitable":
        return False
    if e.get("verdict") != "pass":
        return True
    m = re.fullmatch(r"([0-9.]+)x \([a-z_+]+\); fastest ([0-9.]+)x", e.get("check") or "")
    return bool(m) and float(m.group(2)) >= 1.2 * float(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("audit")
    ap.add_argument("out")
    ap.add_argument("--commit", required=True)
    ap.add_argument("--command", required=True)
    ap.add_argument("--passed", type=int, required=True)
    ap.add_argument("--failed", type=int, required=True)
    for k, v in (("gpu", "NVIDIA H200"), ("driver", "580.159.04"), ("cuda", "13.0"), ("torch", "2.11.0+cu130"), ("date", "")):
        ap.add_argument("--" + k, default=v)
    a = ap.parse_args()
    entries = json.load(open(a.audit))
    exploits = [e for e in entries if e.get("kind") == "exploit"]
    controls = [e for e in entries if e.get("kind") == "control"]
    figures = {
        "audit_exploits_count": len(exploits),
        "audit_exploits_refused_count": sum(e.get("verdict") != "pass" for e in exploits),
        "audit_exploits_refused_by_expected_check_count": sum(refused_as_expected(e) for e in exploits),
        "audit_exploits_unprofitable_count": sum(e.get("expected") == "unprofitable" for e in exploits),
        "audit_exploits_as_expected_count": sum(refused_as_expected(e) or unprofitable_as_expected(e) for e in exploits),
        "audit_controls_count": len(controls),
        "audit_controls_accepted_count": sum(e.get("verdict") == "pass" for e in controls),
        "gpu_tests_passed_count": a.passed,
        "gpu_tests_failed_count": a.failed,
    }
    details = [{k: e.get(k) for k in ("candidate", "kind", "expected", "verdict", "check")} for e in entries]
    doc = {"gpu": a.gpu, "driver": a.driver, "cuda": a.cuda, "torch": a.torch, "date": a.date, "commit": a.commit,
           "command": a.command, "figures": figures, "details": details}
    ok = results_doc.write(a.out, doc, "audit_record")
    print(json.dumps(figures, indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
