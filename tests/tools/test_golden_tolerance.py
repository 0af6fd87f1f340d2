"""The tolerance rule's Python copies against tests/golden/tolerance.json, whose verdicts and ratios
the C++ texts of the rule give (tests/env/judge/tolerance_golden_test.cpp: data_synth/reference/tolerance.h
and check_kernel.cpp's device text):
  - tools/dataset/task_import/running.py's `within` (the importer's checks): every case;
  - tools/dataset/synth_gpu/checks.py's torch operations (`failing_fraction_eager`) and its Triton kernel
    (`FusedCounts`, run by Triton's interpreter): the finite cases, their domain; run_checks rejects a
    non-finite output (nonfinite_gpu) before it counts anything, which the last test holds."""
import json
import math
import os
import sys

import pytest
import torch

SOURCE_DIR = os.environ.get("KFORGE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(SOURCE_DIR, "tools", "dataset"))
from synth_gpu import checks  # noqa: E402
from task_import.running import within  # noqa: E402

with open(os.path.join(SOURCE_DIR, "tests", "golden", "tolerance.json")) as f:
    CASES = json.load(f)["cases"]
IDS = [c["name"] for c in CASES]
DTYPES = {"float32": (torch.float32, torch.int32), "float16": (torch.float16, torch.int16),
          "bfloat16": (torch.bfloat16, torch.int16)}


def element(case, key):
    """The case's out or ref: a 1-element tensor of its dtype with the file's bits."""
    dtype, bits = DTYPES[case["dtype"]]
    raw = int(case[key], 16)
    width = torch.iinfo(bits).bits
    signed = raw - (1 << width) if raw >= 1 << (width - 1) else raw
    return torch.tensor([signed], dtype=bits).view(dtype)


def finite(case):
    return case["ratio"] is not None


def test_the_vectors_hold_the_edge_cases_the_issue_names():
    names = " ".join(IDS)
    for part in ("nan_out_finite_ref", "finite_out_nan_ref", "inf_same_sign", "inf_opposite_sign", "zero_tolerance",
                 "subnormal", "minus_zero", "huge", "f16_", "bf16_", "rounds_to"):
        assert part in names, part
    assert {c["outside"] for c in CASES} == {True, False}
    assert sum(finite(c) for c in CASES) >= 30 and sum(not finite(c) for c in CASES) >= 10


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_task_import_within_gives_the_golden_verdict(case):
    out, ref = element(case, "out"), element(case, "ref")
    ok, worst = within(out, ref, case["atol"], case["rtol"])
    assert ok == (not case["outside"]), case["values"]
    if finite(case):
        assert worst == abs(out.double().item() - ref.double().item())


@pytest.mark.parametrize("case", [c for c in CASES if finite(c)], ids=[c["name"] for c in CASES if finite(c)])
def test_synth_gpu_torch_operations_give_the_golden_verdict(case):
    out, ref = element(case, "out"), element(case, "ref")
    assert checks.failing_fraction_eager(torch, ref, out, case["atol"], case["rtol"]) == int(case["outside"]), case["values"]


# Where Triton's interpreter (numpy on the CPU) departs from the rule: it reads a bfloat16 subnormal
# as zero, so with zero tolerance 2^-133 against 0 passes (the torch operations count it). What the
# compiled kernel does there is not known from the CPU: FusedCounts.selfcheck's cases hold no
# bfloat16 subnormal. No task tolerance is that small (bfloat16's atol is 1e-2), so no verdict changes.
INTERPRETER_DEPARTS = ["bf16_subnormal_vs_zero_zero_tolerance"]


def test_synth_gpu_triton_kernel_gives_the_golden_verdicts(monkeypatch):
    if "triton" in sys.modules and os.environ.get("TRITON_INTERPRET") != "1":
        pytest.skip("triton was imported before TRITON_INTERPRET=1 could be set (run this file on its own)")
    monkeypatch.setenv("TRITON_INTERPRET", "1")  # read when triton is imported (FusedCounts._build)
    pytest.importorskip("triton")
    fused = checks.FusedCounts()
    wrong = []
    for case in filter(finite, CASES):
        out, ref = element(case, "out"), element(case, "ref")
        v, _, _ = fused.counts(torch, ref, out, None, case["atol"], case["rtol"])
        if v != int(case["outside"]):
            wrong.append(case["name"])
    assert wrong == INTERPRETER_DEPARTS


def test_synth_gpu_rejects_non_finite_outputs_before_counting():
    """The checks' domain: a non-finite output stops run_checks (nonfinite_gpu) before the rule runs."""
    task = {"tolerance": {"atol": 1e-4, "rtol": 1e-4}, "outputs": []}
    for case in (c for c in CASES if not finite(c)):
        out = element(case, "out")
        reason, _ = checks.run_checks(torch, lambda x: x.clone(), lambda: [out.clone()], task, 0.0, False)
        assert reason == "nonfinite_gpu" or math.isfinite(out.double().item()), case["name"]
        ref = element(case, "ref")
        reason, _ = checks.run_checks(torch, lambda x: x.clone(), lambda: [ref.clone()], task, 0.0, False)
        assert reason == "nonfinite_gpu" or math.isfinite(ref.double().item()), case["name"]
