"""The kforge command line: bad input gives one clear error line and a non-zero exit, never a
crash; the task commands work on a shipped sample."""
import json
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "data_synth"))
from kforge_dump import KFORGE, SOURCE_DIR, run  # noqa: E402

SAMPLE = os.path.join(SOURCE_DIR, "datasets", "samples", "linear_relu.yaml")


def one_error_line(result, kind, *parts):
    assert result.returncode in (1, 2), f"exit {result.returncode} (a negative code is a crash)\n{result.stderr}"
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"kforge: {kind}: ") or lines[0].startswith(f"kforge: {kind}"), lines[0]
    for p in parts:
        assert p in lines[0], lines[0]
    return lines[0]


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def sample_text():
    with open(SAMPLE) as f:
        return f.read()


def test_malformed_yaml(tmp_path):
    path = write(tmp_path, "bad.yaml", "kforge_task: 1\nid: [unclosed\n")
    one_error_line(run("task", "show", path, check=False), "spec_error", path + ":", "not valid YAML")


def test_unknown_operator(tmp_path):
    path = write(tmp_path, "op.yaml", sample_text().replace("op: relu", "op: rleu"))
    one_error_line(run("task", "run", path, "--check-dims", check=False), "spec_error",
                   "unknown operator 'rleu' (did you mean 'relu'?)", path + ":")


def test_impossible_shape(tmp_path):
    text = sample_text().replace("{id: act, op: relu, in: [fc]}",
                                 "{id: act, op: reshape, in: [fc], attrs: {shape: [7, -1]}}")
    text = text.split("arguments:")[0] + "provenance: {generator: test}\n"
    path = write(tmp_path, "shape.yaml", text)
    one_error_line(run("task", "render", path, check=False), "shape_error", "node 1 'act' (reshape): cannot reshape")


def test_missing_file():
    one_error_line(run("task", "show", "/nonexistent/task.yaml", check=False), "io_error", "/nonexistent/task.yaml")


def test_stated_argument_disagreeing_with_graph(tmp_path):
    path = write(tmp_path, "arg.yaml", sample_text().replace("shape: [4096, 4096], dtype: float32, draw: {dist: uniform",
                                                             "shape: [4096, 4095], dtype: float32, draw: {dist: uniform", 1))
    one_error_line(run("task", "show", path, check=False), "spec_error", "shape of 'fc.weight' is [4096, 4096] by the graph")


def test_unknown_config_key(tmp_path):
    cfg = write(tmp_path, "eval.yaml", "timing:\n  warmup_cont: 3\n")
    one_error_line(run("task", "run", SAMPLE, "--check-dims", "--config", cfg, check=False), "config_error",
                   cfg + ":2:3: timing.warmup_cont: unknown key (did you mean 'warmup_count'?)")


def test_usage_errors_exit_2():
    r = run("task", "run", check=False)
    one_error_line(r, "usage error")
    assert r.returncode == 2
    r = run("task", "run", SAMPLE, "--device", "tpu", check=False)
    one_error_line(r, "usage_error", "--device is cpu or cuda")
    r = run("frobnicate", check=False)
    assert r.returncode == 2


def test_cuda_request_without_a_device_is_one_line():
    import torch
    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device")
    one_error_line(run("task", "run", SAMPLE, "--device", "cuda", "--check-dims", check=False), "runtime_error",
                   "no CUDA device")


def test_show_render_run_on_a_sample():
    shown = run("task", "show", "linear_relu").stdout  # a sample name resolves to datasets/samples/
    assert "id: linear_relu" in shown and "arguments:" in shown and "cost:" in shown
    program = run("task", "render", "linear_relu").stdout
    assert "class Model(nn.Module):" in program and "def get_inputs():" in program
    out = run("task", "run", "linear_relu", "--check-dims").stdout
    assert "reference time: median" in out and "method: steady_clock" in out


def test_run_json_has_the_timing_and_device():
    doc = json.loads(run("task", "run", SAMPLE, "--check-dims", "--json").stdout)
    assert doc["task"] == "linear_relu"
    assert doc["device"]["kind"] == "cpu"
    assert doc["timing"]["n"] >= 10 and doc["timing"]["median_ms"] > 0
    assert doc["outputs"][0]["shape"] == [8, 24] and doc["outputs"][0]["finite"]
    assert doc["precision_flags"]["allow_tf32_cublas"] == "false"


def test_fmt_rewrites_a_short_spec_into_full_form(tmp_path):
    # The short form drops the arguments, outputs and cost; it keeps a measured baselines block,
    # which fmt must write back as it was.
    text = sample_text()
    kept = "baselines:" + text.split("\nbaselines:")[1].split("provenance:")[0] if "\nbaselines:" in text else ""
    short = text.split("arguments:")[0] + kept + "provenance: {generator: hand-written sample, seed: 0}\n"
    path = write(tmp_path, "short.yaml", short)
    run("task", "fmt", "--write", path)
    with open(path) as f:
        assert f.read() == sample_text()


def test_counters_counts_replay_passes_without_a_gpu():
    """kforge counters: CUPTI's host API for the H100/H200 chip, no GPU. The default list needs the
    6 passes the H200 measured; with the two throughput metrics it is the 19 passes of the old
    default; an unknown metric is listed, and an unknown chip or no known metric is one error
    line."""
    short = ["gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum",
             "sm__warps_active.avg.pct_of_peak_sustained_active", "lts__t_sector_hit_rate.pct"]
    r = run("counters")
    assert all(m in r.stdout for m in short) and "throughput" not in r.stdout, r.stdout
    assert r.stdout.rstrip().endswith("together: 6 pass(es) for 5 metric(s)"), r.stdout
    r = run("counters", *short, "sm__throughput.avg.pct_of_peak_sustained_elapsed",
            "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed")
    assert "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed  5" in r.stdout, r.stdout
    assert r.stdout.rstrip().endswith("together: 19 pass(es) for 7 metric(s)"), r.stdout
    r = run("counters", *short, "no_such__metric.sum")
    assert "no_such__metric.sum" in r.stdout and "unknown on GH100" in r.stdout
    assert r.stdout.rstrip().endswith("together: 6 pass(es) for 5 metric(s)"), r.stdout
    one_error_line(run("counters", "--chip", "NOPE", check=False), "runtime_error", "NOPE", "INVALID_CHIP_NAME")
    one_error_line(run("counters", "no_such__metric.sum", check=False), "runtime_error", "none of the metrics")


def test_the_samples_are_their_own_source(tmp_path):
    """The shipped samples say `source: samples` (never rows of a dataset); a source outside the
    format's list is one error line naming them all, in a spec and in `kforge tasks --source`."""
    assert "task gated_linear (samples, heldout): " in run("task", "run", "gated_linear", "--check-dims").stdout
    assert "\nsource: samples\n" in run("task", "show", "linear_relu").stdout
    path = write(tmp_path, "bad_source.yaml", sample_text().replace("source: samples", "source: sample"))
    one_error_line(run("task", "show", path, check=False), "spec_error", "unknown source 'sample'",
                   "synth, kernelbench, cuda-agent-ops, samples, other")
    dataset = os.path.join(SOURCE_DIR, "datasets", "synth", "dataset.h5.xz")
    one_error_line(run("tasks", "count", dataset, "--source", "Synth", check=False), "usage_error",
                   "--source is one of synth, kernelbench, cuda-agent-ops, samples, other, not 'Synth'")


def candidate_dir(task, name):
    return os.path.join(SOURCE_DIR, "datasets", "samples", "candidates", task, name)


def test_eval_check_reports_its_cold_start():
    """`kforge eval --check --json` says where its wall time went (env/evaluator/EVAL_REPORT.md
    `cold_start`): the CLI's own start, the compile worker's start split by phase (no warm-up: one
    candidate, nothing to hide it behind), no GPU worker, the request and the shutdown."""
    r = run("eval", "--check", "--task", "linear_relu", "--candidate", candidate_dir("linear_relu", "tiled"), "--json")
    doc = json.loads(r.stdout)
    assert doc["verdict"] == "checked"
    c = doc["cold_start"]
    for k in ("process_to_main_ms", "static_init_ms", "setup_ms", "request_at_ms", "request_ms", "shutdown_ms",
              "main_to_report_ms", "wall_ms", "worker_ms"):
        assert isinstance(c[k], (int, float)) and c[k] >= 0, (k, c)
    assert c["gpu_worker"] is None, "--check starts no GPU worker"
    assert c["worker_ms"] == doc["compile"]["compile_ms"]
    assert abs(c["overhead_ms"] - (c["wall_ms"] - c["worker_ms"])) < 1e-6
    assert abs(c["wall_ms"] - (c["process_to_main_ms"] + c["main_to_report_ms"])) < 1e-6
    assert c["setup_ms"] <= c["request_at_ms"] <= c["main_to_report_ms"]
    assert c["request_ms"] >= doc["compile"]["compile_ms"]
    w = c["compile_worker"]
    for k in ("spawn_at_ms", "spawn_to_preinit_ms", "static_init_ms", "spawn_to_main_ms", "init_ms", "spawn_to_ready_ms",
              "ready_at_ms", "hello_at_ms", "hello_wait_ms", "spawn_to_hello_ms"):
        assert isinstance(w[k], (int, float)) and w[k] >= 0, (k, w)
    assert w["spawn_at_ms"] >= c["setup_ms"]
    assert w["spawn_to_main_ms"] <= w["spawn_to_ready_ms"] <= w["spawn_to_hello_ms"] + 1e-3
    assert set(w["phases_ms"]) == {"nvrtc_init", "seccomp"}, w["phases_ms"]
    # The text report ends with the same breakdown on one line.
    text = run("eval", "--check", "--task", "linear_relu", "--candidate", candidate_dir("linear_relu", "tiled")).stdout
    last = text.rstrip().splitlines()[-1]
    assert last.startswith("cold start: ") and "compile worker ready at" in last and "shutdown" in last, text


def test_eval_runs_without_libtorch_and_every_other_command_is_still_there():
    """`kforge` loads no libtorch (eval and demo judge through worker processes, serve and record are
    the rollout server's); every other command line is run by kforge-full, the same help and errors."""
    import shutil
    import subprocess
    if shutil.which("ldd"):
        libs = subprocess.run(["ldd", shutil.which(KFORGE) or KFORGE], capture_output=True, text=True).stdout
        assert "libtorch" not in libs and "libc10" not in libs, libs
    helped = run("--help").stdout
    for cmd in ("task", "ops", "eval", "demo", "synth", "tasks", "serve", "record", "counters"):
        assert f"  {cmd}" in helped, helped
    assert "--candidate" in run("eval", "--help").stdout
    assert "--record" in run("serve", "--help").stdout and "--connect" in run("record", "--help").stdout


def test_serve_and_record_run_in_kforge_itself_without_kforge_full(tmp_path):
    """A copy of `kforge` alone, with no kforge-full beside it: serve and record (like eval) answer
    from this process; a command that needs libtorch says that it cannot run kforge-full."""
    import shutil
    import subprocess
    alone = tmp_path / "kforge"
    shutil.copy2(shutil.which(KFORGE) or KFORGE, alone)
    for cmd, option in (("serve", "--record"), ("record", "--connect"), ("eval", "--candidate")):
        r = subprocess.run([str(alone), cmd, "--help"], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and option in r.stdout, (cmd, r.returncode, r.stderr)
    r = subprocess.run([str(alone), "tasks", "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "io_error" in r.stderr and "kforge-full" in r.stderr, (r.returncode, r.stderr)
    one_error_line(run("eval", "--task", "no_such_task", "--candidate", ".", check=False), "io_error", "no_such_task")
