"""The GPU stage (tools/dataset/synth_gpu/) on imported tasks, in its CPU mode: KernelBench-format modules
imported by `kforge tasks import` are timed as they are (their own shapes: they have no check_dims),
in their own module mode (train, KernelBench's default, or eval), kept whatever their time (no
runtime window rejects a benchmark task), and merged back as baselines whose flags name the mode."""
import os

from synth_tool import FAST, SOURCE_DIR, kforge, records, tool

MODULES = os.path.join(SOURCE_DIR, "tests", "tools", "import_modules")
IMPORTED = {"kb_l1_relu_op": "level1/relu_op.py", "kb_l2_conv_bn_relu_train": "level2/conv_bn_relu_train.py",
            "kb_l2_linear_bn_eval": "level2/linear_bn_eval.py"}


def test_imported_tasks_are_timed_in_their_module_mode_kept_and_merged(tmp_path):
    out = tmp_path / "imp"
    # --no-input-check: conv_bn_relu_train's conv bias is cancelled by train-mode BatchNorm, so the
    # input checks (sensitivity.h) would skip it; here it stands for a train-mode module.
    kforge("tasks", "import", "--format", "kernelbench", *[os.path.join(MODULES, f) for f in IMPORTED.values()],
           "--out", str(out), "--no-input-check")
    ds = out / "dataset.h5"
    # A window that every synthesised task falls outside of (test_synth_gpu_runs.py): imports stay.
    narrow = tmp_path / "narrow.yaml"
    narrow.write_text("window_ms_low: 1.0e+6\nwindow_ms_high: 1.0e+7\n")
    r = tool(ds, "--device", "cpu", "--config", narrow, "--workers", "0", *FAST)
    recs = {x["id"]: x for x in records(out / "gpu")}
    assert set(recs) == set(IMPORTED), r.stdout + r.stderr
    for x in recs.values():
        assert x["status"] == "ok" and x["reason"] == "", x
        assert x["eager_ms"] > 0 and x["compile_ms"] > 0 and x["dims"] == "full", x
    assert recs["kb_l2_conv_bn_relu_train"]["flags"]["module_mode"] == "train"  # batch statistics, as KernelBench
    assert recs["kb_l1_relu_op"]["flags"]["module_mode"] == "train"
    assert recs["kb_l2_linear_bn_eval"]["flags"]["module_mode"] == "eval"  # the module asks for eval itself
    tool("--merge", ds, "--allow-cpu", "--no-plots")
    for task_id in IMPORTED:
        spec = kforge("tasks", "show", str(ds), task_id).stdout  # parsed by kforge: the artifact survives
        assert "baselines:" in spec and "eager_ms:" in spec and "kind: torchscript" in spec, spec[:400]
    assert 'module_mode: "train"' in kforge("tasks", "show", str(ds), "kb_l2_conv_bn_relu_train").stdout
