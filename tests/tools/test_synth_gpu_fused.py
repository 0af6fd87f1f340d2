"""The fused Triton kernel of tools/dataset/synth_gpu.py's checks, on a GPU (ctest label gpu): its
self-check passes on the device, its counts equal the torch operations' beyond 2^31 elements, and
a run of the tool with it gives the same rows as a run without it. Prints the time of both ways on
a 1 GiB output. Skips, saying why, where there is no CUDA device."""
import json
import os
import subprocess
import sys

import pytest
import torch

from synth_tool import TOOL, load_tool

try:
    import triton  # noqa: F401
    WHY = "" if torch.cuda.is_available() else "no CUDA device: the fused checks' GPU tests need one"
except ImportError:
    WHY = "triton is not installed"
# Each test skips, saying why (a module-level skip would make pytest's exit code 5, a ctest failure).
pytestmark = pytest.mark.skipif(bool(WHY), reason=WHY)

KFORGE = os.environ.get("KFORGE_BIN", "kforge")


def test_selfcheck_on_the_device_and_no_fma_in_the_launched_kernel():
    m = load_tool()
    assert m.FUSED.selfcheck(torch, torch.device("cuda")) == "ok"
    ptx = m.FUSED.last.asm["ptx"]  # the kernel as launched, with enable_fp_fusion=False
    assert "fma.rn.f64" not in ptx and "mul.rn.f64" in ptx and "add.rn.f64" in ptx


def test_counts_equal_beyond_two_to_the_31_elements():
    m = load_tool()
    n = (1 << 31) + 5  # int64 offsets: the last block lies past 2^31
    g = torch.Generator(device="cuda").manual_seed(11)
    x = torch.randn(n, device="cuda", dtype=torch.float16, generator=g)
    y = x.clone()
    y[-1000:] += 1  # the failures sit at the very end
    y[: 1 << 20].add_(torch.randn(1 << 20, device="cuda", dtype=torch.float16, generator=g) * 1e-2)
    c = torch.mean(x, dtype=torch.float64)
    want = m.informative_counts_eager(torch, x, y, c, 1e-3, 1e-3)
    got = m.FUSED.counts(torch, x, y, c, 1e-3, 1e-3)
    assert tuple(got) == tuple(want) and got[0] >= 1000


def test_time_of_both_ways_on_a_1_gib_output():
    m = load_tool()
    n = 1 << 28
    g = torch.Generator(device="cuda").manual_seed(12)
    x = torch.randn(n, device="cuda", generator=g)
    y = x + 1e-4 * torch.randn(n, device="cuda", generator=g)
    c = torch.mean(x, dtype=torch.float64)
    assert m.FUSED.selfcheck(torch, torch.device("cuda")) == "ok"
    times = {}
    for name, fn in (("fused", m.FUSED.counts), ("torch", m.informative_counts_eager)):
        fn(torch, x, y, c, 1e-4, 1e-4)  # warm-up (the kernel's build)
        ms = []
        for _ in range(7):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            out = fn(torch, x, y, c, 1e-4, 1e-4)
            b.record()
            b.synchronize()
            ms.append(a.elapsed_time(b))
        times[name] = (sorted(ms)[3], out)
    assert times["fused"][1] == times["torch"][1]
    print(f"\nfused checks, 1 GiB float32 output (2^28 elements), median of 7: fused {times['fused'][0]:.2f} ms, "
          f"torch operations {times['torch'][0]:.2f} ms ({times['torch'][0] / times['fused'][0]:.1f}x)")


def test_a_run_with_and_without_gives_the_same_rows(tmp_path):
    cfg = tmp_path / "synth.yaml"
    cfg.write_text("seed: 3\ntarget_tasks: 4\nshard_candidates: 10\n")
    subprocess.run([KFORGE, "synth", "--config", str(cfg), "--out", str(tmp_path / "ds"), "--quiet"], check=True,
                   capture_output=True, text=True)
    rows = {}
    for flag in ("--fused-checks", "--no-fused-checks"):
        out = tmp_path / flag.strip("-")
        r = subprocess.run([sys.executable, TOOL, str(tmp_path / "ds" / "dataset.h5"), "--out", str(out), flag,
                            "--workers", "0", "--min-n", "3", "--max-n", "5", "--warmup-calls", "1", "--progress-s", "0"],
                           capture_output=True, text=True, timeout=900)
        assert r.returncode == 0, r.stdout + r.stderr
        recs = [json.loads(line) for line in open(out / "part-0.jsonl")]
        assert recs and all(x["checks_impl"] == ("fused" if flag == "--fused-checks" else "torch") for x in recs), recs
        # The status, unless the timed median decided it (a task on the window's edge may flip with the noise).
        rows[flag] = {x["id"]: ("window" if x["reason"] == "eager_runtime_window" else x["status"],
                                json.dumps(x.get("checks"), sort_keys=True)) for x in recs}
    assert rows["--fused-checks"] == rows["--no-fused-checks"]
    assert any('"informative"' in checks for _, checks in rows["--fused-checks"].values())
