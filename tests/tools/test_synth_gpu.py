"""tools/dataset/synth_gpu.py (the GPU stage of the synthesizer) in its CPU mode, its parts one by one: the
shards kforge exports, the statistics, the checks' fractions and their fused Triton kernel (run by
Triton's interpreter and compiled for sm_90 without a GPU), the phases and CPU split, the GPU turn
between processes, the baselines block written into a spec through kforge, and the one-line errors.
Whole runs on a tiny dataset: test_synth_gpu_runs.py. No GPU needed."""
import json
import math
import os
import subprocess
import sys
import time

import h5py
import pytest
import yaml

from synth_tool import N_TASKS, SOURCE_DIR, kforge, load_tool, make_dataset, one_error_line, tool


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return make_dataset(tmp_path_factory)


# -- pure helpers -------------------------------------------------------------------------------

def test_shards_from_kforge_cover_every_row_once(dataset):
    """The rows of a run come from `kforge tasks export-gpu`: k/N blocks cover every row once, all/N
    is every block in turn, each row tagged with its shard."""
    m = load_tool()
    ds = str(dataset / "ds" / "dataset.h5")
    for n in (1, 3, 8):
        blocks = [m.export_tasks(ds, f"{k}/{n}")[1] for k in range(n)]  # each a kforge call: asked once
        rows = [(t["row"], t["shard"]) for block in blocks for t in block]
        assert [r for r, _ in rows] == list(range(N_TASKS))
        assert m.export_tasks(ds, f"all/{n}")[1] == [t for block in blocks for t in block]
        assert all(k == r * n // N_TASKS or (k * N_TASKS // n <= r < (k + 1) * N_TASKS // n) for r, k in rows)
    for bad in ("8/8", "1", "a/b", "-1/2", "0/0"):
        with pytest.raises(m.InputError, match="--shard"):
            m.export_tasks(ds, bad)


def test_stats_median_and_rse():
    m = load_tool()
    s = m.stats([3.0, 1.0, 2.0, 4.0])  # the records' statistics (timing.stats)
    assert s["median_ms"] == 2.5 and s["n"] == 4 and s["min_ms"] == 1.0 and s["max_ms"] == 4.0
    assert abs(s["rse"] - (math.sqrt(5 / 3) / 2 / 2.5)) < 1e-12
    assert m.stats([5.0] * 10)["rse"] == 0.0


def test_informative_fractions_match_failing_fraction_chunked():
    import torch
    m = load_tool()
    g = torch.Generator().manual_seed(3)
    for shape, dtype in (((1000,), torch.float32), ((7, 13), torch.float64), ((50,), torch.bfloat16), ((1,), torch.float32),
                         ((0,), torch.float32)):
        x = torch.randn(*shape, generator=g, dtype=dtype)
        x[::5] = 0  # exact zeros, and equal elements in y below
        y = torch.where(torch.rand(*shape, generator=g) < 0.3, x, torch.randn(*shape, generator=g, dtype=dtype))
        y_before = y.clone()
        for chunk in (1 << 26, 7):  # one chunk, and many chunks with a ragged end
            m.checks.CHUNK = chunk
            for atol, rtol in ((1e-4, 1e-4), (0.5, 0.1), (0.0, 0.0)):
                v, z, c = m.informative_fractions(torch, x, y, atol, rtol)
                assert v == m.failing_fraction(torch, x, y, atol, rtol)
                assert z == m.failing_fraction(torch, x, torch.zeros((), dtype=x.dtype), atol, rtol)
                want_c = 1.0
                if x.numel() > 1:
                    mean = torch.full((), torch.mean(x, dtype=torch.float64).item(), dtype=torch.float64)
                    want_c = m.failing_fraction(torch, x, mean, atol, rtol)
                assert c == want_c
        assert torch.equal(y, y_before)  # the inputs are never written


FUSED_PROBE = r"""
import os, sys
sys.path.insert(0, sys.argv[1])
import torch
from synth_gpu import checks as m
dev = torch.device("cpu")
F = m.FUSED
assert F.interpret, "TRITON_INTERPRET=1 did not reach the tool"
# Interpreted, each of a launch's programs is Python: without the 49-block length (seven eighths of
# the programs) the self-check still spans blocks with a ragged end (3 x BLOCK + 5); the GPU suite
# (test_synth_gpu_fused.py) runs it whole. Kept where usable() keeps its own: the fractions below
# reuse it instead of running the interpreted self-check (320 launches) a second time.
assert F.SIZES[-1] == 100003
F.SIZES = F.SIZES[:-1]
F.state[str(dev)] = F.selfcheck(torch, dev)
print("selfcheck", F.state[str(dev)])
# informative_fractions through the kernel (interpreted) and through the torch operations agree
g = torch.Generator().manual_seed(5)
x = torch.randn(5000, generator=g)
y = torch.where(torch.rand(5000, generator=g) < 0.5, x, x + 1e-3 * torch.randn(5000, generator=g))
x[::97] = float("nan")
fused = m.informative_fractions(torch, x, y, 1e-4, 1e-4)
F.enabled = False
plain = m.informative_fractions(torch, x, y, 1e-4, 1e-4)
print("fractions", fused == plain, fused)
F.enabled = True
# a kernel that miscounts one element is caught and turned off
G = m.FusedCounts()
real = G.counts
def off_by_one(*a):
    v, z, k = real(*a)
    return v, z + 1, k
G.counts = off_by_one
print("broken", G.selfcheck(torch, dev))
"""


def test_fused_counts_equal_the_torch_operations_interpreted(tmp_path):
    """The fused Triton kernel of the checks, run by Triton's interpreter on the CPU: its
    self-check passes, its fractions equal the torch operations' (NaN included), and a kernel that
    miscounts is turned off. (The GPU build of the same kernel: test_synth_gpu_fused.py, label gpu.)"""
    pytest.importorskip("triton", reason="triton is not installed (it comes with the CUDA torch wheel)")
    probe = tmp_path / "probe.py"
    probe.write_text(FUSED_PROBE)
    r = subprocess.run([sys.executable, str(probe), os.path.join(SOURCE_DIR, "tools", "dataset")], capture_output=True, text=True,
                       timeout=600, env=dict(os.environ, TRITON_INTERPRET="1"))
    assert r.returncode == 0, r.stdout + r.stderr
    lines = dict(line.split(" ", 1) for line in r.stdout.splitlines())
    assert lines["selfcheck"] == "ok", r.stdout
    assert lines["fractions"].startswith("True"), r.stdout
    assert lines["broken"].startswith("off: the kernel's counts") and "differ from torch's" in lines["broken"], r.stdout


def test_fused_kernel_for_sm90_has_no_fma_without_fp_fusion():
    """The fused kernel compiled for sm_90 here (Triton's own ptxas, no GPU needed): with
    enable_fp_fusion=False, the option the tool launches it with, rtol * |r| + atol is a rounded
    multiply and a rounded add, as in torch; with fusion it would be one FMA, rounded once."""
    pytest.importorskip("triton", reason="triton is not installed (it comes with the CUDA torch wheel)")
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    m = load_tool()
    m.FUSED._build()
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "p_ptr": "*fp64", "out_ptr": "*i64", "n": "i32", "HAS_C": "constexpr",
           "BLOCK": "constexpr"}
    ptx = {}
    for fusion in (False, True):
        src = ASTSource(fn=m.FUSED.kernel, signature=sig, constexprs={(5,): True, (6,): m.FUSED.BLOCK})
        ptx[fusion] = triton.compile(src, target=GPUTarget("cuda", 90, 32),
                                     options={"num_warps": 8, "enable_fp_fusion": fusion}).asm["ptx"]
    assert "fma.rn.f64" not in ptx[False] and "mul.rn.f64" in ptx[False] and "add.rn.f64" in ptx[False]
    assert "fma.rn.f64" in ptx[True]  # the option is what makes the difference


def test_fused_checks_are_off_on_the_cpu_and_by_flag():
    import torch
    m = load_tool()
    x = torch.randn(100)
    if not m.FUSED.interpret:
        assert not m.FUSED.usable(torch, x, x)  # CPU tensors: the torch operations
    m.FUSED.enabled = False
    assert not m.FUSED.usable(torch, x, x)
    assert "--no-fused-checks" in m.FUSED.describe()


def test_phases_sum_to_the_wall_and_cpu_split():
    m = load_tool()
    ph = m.Phases()
    with ph("exec_build"):
        time.sleep(0.01)
    with ph("timing"):
        time.sleep(0.02)
    rec = ph.record(0.05)
    assert set(rec) == {"exec_build", "timing", "other"} and rec["other"] >= 0
    assert abs(sum(rec.values()) - 0.05) < 1e-3
    assert ph.record(0.0)["other"] == 0.0  # never negative
    assert m.parse_cpulist("0-2,8,10-11\n") == {0, 1, 2, 8, 10, 11}
    assert m.split_cpus(0) == (None, None)
    assert m.split_cpus(10 ** 6) == (None, None)
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) >= 2:
        main, workers = m.split_cpus(1)
        assert main and workers and sorted(main + workers) == cpus and not set(main) & set(workers)


def test_gpu_turn_excludes_and_is_freed_when_its_holder_dies(tmp_path):
    import multiprocessing as mp
    import threading
    m = load_tool()
    path = str(tmp_path / "turn.lock")
    want, sampling = mp.RawValue("b", 0), mp.RawValue("b", 0)
    main = m.GpuTurn(path, want, sampling, main=True)
    worker = m.GpuTurn(path, want, sampling, main=False)
    got = []
    with main.hold():
        t = threading.Thread(target=lambda: (worker.acquire(), got.append(time.monotonic())))
        t0 = time.monotonic()
        t.start()
        time.sleep(0.2)
        assert not got  # the worker waits while the main process holds the turn
    t.join(5)
    assert got and got[0] - t0 >= 0.2 and worker.held
    assert not main.held
    worker.release()
    # A holder killed while holding (a compile worker past the timeout): the kernel frees the turn.
    holder = subprocess.Popen([sys.executable, "-c", f"import fcntl, os, time; fd = os.open({path!r}, os.O_RDWR); "
                               "fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); time.sleep(600)"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        spins = []
        main.spin = lambda s: (spins.append(s), time.sleep(s), len(spins) == 50 and holder.kill())
        main.acquire()
        assert main.held and len(spins) >= 50 and want.value == 0
        main.release()
    finally:
        holder.kill()
        holder.wait()


def test_baselines_go_into_the_spec_as_the_parser_reads_them(dataset, tmp_path):
    """What --merge sends for an ok row (merge.spec_baselines_of) goes into the spec through kforge,
    the block where kforge writes it, every other key unchanged, a second write replacing it."""
    m = load_tool()
    with h5py.File(dataset / "ds" / "dataset.h5") as f:
        spec = f["tasks/spec_yaml"].asstr()[0]
    rec = {"eager_ms": 2.5, "compile_ms": 1.25, "method": 'CUDA events; "quoted" and: colons',
           "env": {"gpu": "NVIDIA H200", "torch": "2.11.0+cu130", "cuda": "13.0"},
           "flags": {"allow_tf32_cublas": "false", "allow_tf32_cudnn": "false"}}
    task, src = tmp_path / "t.yaml", tmp_path / "b.json"
    task.write_text(spec)
    src.write_text(json.dumps(m.spec_baselines_of(rec)))
    kforge("task", "set-baselines", str(task), "--from", str(src))
    new = task.read_text()
    before, after = yaml.safe_load(spec), yaml.safe_load(new)
    b = after.pop("baselines")
    assert after == before  # nothing else changed
    assert b == {"eager_ms": 2.5, "compile_ms": 1.25, "gpu": "NVIDIA H200", "torch": "2.11.0+cu130", "cuda": "13.0",
                 "method": rec["method"], "flags": rec["flags"]}
    assert list(yaml.safe_load(new).keys())[-2:] == ["baselines", "provenance"]  # where kforge writes it
    src.write_text(json.dumps(m.spec_baselines_of(dict(rec, eager_ms=3.0))))  # a second merge replaces the block
    kforge("task", "set-baselines", str(task), "--from", str(src))
    again = task.read_text()
    assert again.count("baselines:") == 1 and yaml.safe_load(again)["baselines"]["eager_ms"] == 3.0


# -- errors -------------------------------------------------------------------------------------

def test_bad_inputs_give_one_clear_line(tmp_path, dataset):
    one_error_line(tool(tmp_path / "missing.h5", "--device", "cpu", check=False), "missing.h5", "no such file")
    junk = tmp_path / "junk.h5"
    junk.write_text("not hdf5")
    one_error_line(tool(junk, "--device", "cpu", check=False), "junk.h5", "not an HDF5 file")
    other = tmp_path / "other.h5"
    with h5py.File(other, "w") as f:
        f["x"] = [1, 2, 3]
    one_error_line(tool(other, "--device", "cpu", check=False), "other.h5", "not a kforge dataset")
    one_error_line(tool("--merge", junk, check=False), "junk.h5", "not an HDF5 file")
    ds = dataset / "ds" / "dataset.h5"
    one_error_line(tool(ds, "--device", "cpu", "--shard", "3/3", check=False), "--shard", "3/3")
    ids = tmp_path / "ids.txt"
    ids.write_text("syn7_00000_0000\nnot_a_task\n")
    one_error_line(tool(ds, "--device", "cpu", "--ids", ids, check=False), "ids.txt", "not in", "not_a_task")
    one_error_line(tool(ds, "--device", "cpu", "--ids", ids, "--shard", "all/2", check=False), "--ids takes --shard k/N")
    one_error_line(tool(ds, "--device", "cpu", "--ids", tmp_path / "no_ids.txt", check=False), "no_ids.txt", "cannot read")
    one_error_line(tool(ds, "--device", "cpu", "--config", tmp_path / "nope.yaml", check=False), "nope.yaml")
    bad_cfg = tmp_path / "bad.yaml"
    bad_cfg.write_text("window_ms_low: 5\nwindow_ms_high: 1\n")
    one_error_line(tool(ds, "--device", "cpu", "--config", bad_cfg, check=False), "bad.yaml", "window_ms_low")
    one_error_line(tool("--merge", ds, "--out", tmp_path / "empty", check=False), "no part-*.jsonl")
    import torch
    if not torch.cuda.is_available():
        one_error_line(tool(ds, "--out", tmp_path / "o", check=False), "--device cuda", "no CUDA device")

