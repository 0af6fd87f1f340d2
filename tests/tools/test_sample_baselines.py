"""tools/dataset/sample_baselines.py: the sample tasks packed as a dataset, measured by tools/dataset/synth_gpu.py (here
in its CPU mode, at the check dims), merged, and the baselines written back into the sample YAMLs:
only the measured ones, every other line kept, and the specs still parse. No GPU needed."""
import os
import subprocess
import sys

import h5py
import yaml

KFORGE = os.environ.get("KFORGE_BIN", "kforge")
SOURCE_DIR = os.environ.get("KFORGE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
TOOL = os.path.join(SOURCE_DIR, "tools", "dataset", "sample_baselines.py")
SYNTH_GPU = os.path.join(SOURCE_DIR, "tools", "dataset", "synth_gpu.py")
# Samples whose programs run at their check dims (the CPU mode), and one that does not (its module
# is built at the full dims): it is rejected and must be left alone.
RUNS = ["gelu_scale_residual", "softmax_rows", "transpose_add"]
FAILS = "linear_relu"


def without_baselines(spec):
    """The spec text's lines without its top-level `baselines:` block (the samples before any run)."""
    out, skip = [], False
    for ln in spec.splitlines(keepends=True):
        if ln[:1] not in (" ", "\t", "#", "-", "\n", "") and ":" in ln:
            skip = ln.startswith("baselines:")
        if not skip:
            out.append(ln)
    return out


def run(*cmd, check=True):
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=600)
    if check and r.returncode != 0:
        raise AssertionError(f"{cmd} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return r


def test_pack_measure_merge_apply(tmp_path):
    samples = tmp_path / "samples"
    samples.mkdir()
    for name in RUNS + [FAILS]:
        with open(os.path.join(SOURCE_DIR, "datasets", "samples", name + ".yaml")) as f:
            (samples / (name + ".yaml")).write_text("".join(without_baselines(f.read())))
    before = {p: p.read_text() for p in samples.iterdir()}
    out = tmp_path / "packed"
    r = run(sys.executable, TOOL, "pack", out, "--samples", samples, "--kforge", KFORGE)
    assert "4 sample tasks" in r.stdout
    ds = out / "dataset.h5"
    with h5py.File(ds) as f:
        ids = list(f["tasks/id"].asstr()[:])
        assert sorted(ids) == sorted(RUNS + [FAILS])
        assert all(s == "cpu_ok" for s in f["tasks/status"].asstr()[:])
        i = ids.index("softmax_rows")
        assert f["tasks/spec_yaml"].asstr()[i] == before[samples / "softmax_rows.yaml"]
        assert "class Model(nn.Module)" in f["tasks/program_py"].asstr()[i]
        # Written by `kforge tasks pack`: the derived columns as kforge synth fills them.
        spec = yaml.safe_load(before[samples / "softmax_rows.yaml"])
        assert f["tasks/program_py"].asstr()[i] == run(KFORGE, "task", "render", samples / "softmax_rows.yaml").stdout
        assert len(f["tasks/graph_hash"].asstr()[i]) == 32 and f["tasks/op_sequence"].asstr()[i] == "softmax(#)"
        assert f["tasks/family"].asstr()[i] == "reduction" and f["tasks/est_runtime_ms"][i] > 0
        assert f["tasks/flops"][i] == spec["cost"]["flops"] and f["tasks/min_bytes"][i] == spec["cost"]["min_bytes"]
        assert f["tasks/source"].asstr()[i] == "samples" and f.attrs["generator"].startswith("tools/sample_baselines.py")
    assert run(KFORGE, "tasks", "count", ds).stdout == "4\n"  # kforge reads the packed file

    (tmp_path / "wide.yaml").write_text("window_ms_low: 0\nwindow_ms_high: 1.0e+9\n")
    run(sys.executable, SYNTH_GPU, ds, "--device", "cpu", "--config", tmp_path / "wide.yaml", "--workers", "0",
        "--min-n", "3", "--max-n", "8", "--max-task-s", "0.5", "--warmup-calls", "1", "--warmup-ms", "1",
        "--progress-s", "0", "--threads", "1")
    run(sys.executable, SYNTH_GPU, "--merge", ds, "--allow-cpu", "--no-plots")

    # Without --allow-cpu a CPU-mode measurement is never written into a sample.
    r = run(sys.executable, TOOL, "apply", ds, "--samples", samples, "--kforge", KFORGE)
    assert "0 sample(s) updated" in r.stdout and "measured on the CPU" in r.stdout
    assert {p: p.read_text() for p in samples.iterdir()} == before

    r = run(sys.executable, TOOL, "apply", ds, "--samples", samples, "--kforge", KFORGE, "--allow-cpu")
    assert f"{len(RUNS)} sample(s) updated, 1 left alone" in r.stdout, r.stdout
    assert f"left alone: {FAILS}: rejected:eager_failed" in r.stdout
    assert (samples / (FAILS + ".yaml")).read_text() == before[samples / (FAILS + ".yaml")]
    with h5py.File(ds) as f:
        eager = dict(zip(f["tasks/id"].asstr()[:], f["tasks/eager_ms"][:]))
        comp = dict(zip(f["tasks/id"].asstr()[:], f["tasks/compile_ms"][:]))
    for name in RUNS:
        path = samples / (name + ".yaml")
        text = path.read_text()
        b = yaml.safe_load(text)["baselines"]
        # The YAML holds six significant digits (kforge task set-baselines), read back exactly.
        assert b["eager_ms"] == float(f"{eager[name]:.6g}") and b["compile_ms"] == float(f"{comp[name]:.6g}")
        assert "CPU MODE" in b["method"] and b["flags"]["allow_tf32_cublas"] == "false"
        # Every line of the original is still there, in order; only the baselines block is new.
        old = before[path].splitlines()
        assert [ln for ln in text.splitlines() if ln in old] == old
        assert "baselines:" in run(KFORGE, "task", "show", path).stdout  # kforge's parser takes it
    # Applying again changes nothing.
    now = {p: p.read_text() for p in samples.iterdir()}
    run(sys.executable, TOOL, "apply", ds, "--samples", samples, "--kforge", KFORGE, "--allow-cpu")
    assert {p: p.read_text() for p in samples.iterdir()} == now


def test_bad_input_is_one_line(tmp_path):
    r = run(sys.executable, TOOL, "apply", tmp_path / "none.h5", "--kforge", KFORGE, check=False)
    assert r.returncode == 2 and "none.h5: no such file" in r.stderr and "Traceback" not in r.stderr
    r = run(sys.executable, TOOL, "pack", tmp_path / "o", "--samples", tmp_path / "nowhere", "--kforge", KFORGE, check=False)
    assert r.returncode == 2 and "not a folder of sample tasks" in r.stderr
    (tmp_path / "empty").mkdir()
    r = run(sys.executable, TOOL, "pack", tmp_path / "o", "--samples", tmp_path / "empty", "--kforge", KFORGE, check=False)
    assert r.returncode == 2 and "no *.yaml sample tasks" in r.stderr
    # A sample kforge cannot parse, or two with one id: one line naming it, and no dataset written.
    bad = tmp_path / "bad"
    bad.mkdir()
    with open(os.path.join(SOURCE_DIR, "datasets", "samples", "softmax_rows.yaml")) as f:
        good = f.read()
    (bad / "a.yaml").write_text(good)
    (bad / "b.yaml").write_text(good)
    r = run(sys.executable, TOOL, "pack", tmp_path / "o2", "--samples", bad, "--kforge", KFORGE, check=False)
    assert r.returncode == 2 and "b.yaml: task id 'softmax_rows' is already in the pack" in r.stderr, r.stderr
    assert not (tmp_path / "o2" / "dataset.h5").exists() and "Traceback" not in r.stderr
    (bad / "b.yaml").write_text(good.replace("dtype: float32", "dtype: float33", 1))
    r = run(sys.executable, TOOL, "pack", tmp_path / "o2", "--samples", bad, "--kforge", KFORGE, check=False)
    assert r.returncode == 2 and "b.yaml" in r.stderr and "float33" in r.stderr, r.stderr
    assert not (tmp_path / "o2" / "dataset.h5").exists()
