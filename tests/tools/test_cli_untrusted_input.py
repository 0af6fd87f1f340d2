"""Hostile input through the command line (issue 26): `kforge eval --check` on a candidate directory
someone else wrote and `kforge record` on a stream any PUSH peer can feed give a typed error or
skip the message with its reason, and a non-zero exit where nothing was done; never a signal, a
hang or a read of a file outside the candidate."""
import os
import shutil
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "data_synth"))
from kforge_dump import KFORGE, SOURCE_DIR  # noqa: E402

TILED = os.path.join(SOURCE_DIR, "datasets", "samples", "candidates", "linear_relu", "tiled")


def kforge(*args, timeout=60):
    return subprocess.run([KFORGE, *args], capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def candidate(tmp_path):
    d = tmp_path / "cand"
    d.mkdir()
    for name in ("kernel.cu", "launch.yaml"):
        shutil.copy(os.path.join(TILED, name), d / name)
    return d


def check(candidate_dir, task="linear_relu"):
    return kforge("eval", "--task", task, "--candidate", str(candidate_dir), "--check")


def refused_before_reading(result, *parts):
    assert result.returncode == 1, f"exit {result.returncode} (a negative code is a signal)\n{result.stderr}"
    line = result.stderr.strip().splitlines()[-1]
    assert line.startswith("kforge: io_error: the candidate file "), line
    for p in parts:
        assert p in line, line
    return line


def test_eval_refuses_a_kernel_symlinked_to_a_host_file(candidate):
    (candidate / "kernel.cu").unlink()
    os.symlink("/etc/passwd", candidate / "kernel.cu")
    r = check(candidate)
    refused_before_reading(r, "kernel.cu is a symbolic link")
    assert "root:" not in r.stdout + r.stderr


def test_eval_refuses_a_fifo_without_hanging(candidate):
    (candidate / "launch.yaml").unlink()
    os.mkfifo(candidate / "launch.yaml")
    refused_before_reading(check(candidate), "launch.yaml is a FIFO")  # the 60 s timeout would raise


def test_eval_refuses_a_10_mb_kernel_by_its_size(candidate):
    (candidate / "kernel.cu").write_text("a" * (10 << 20))
    start = time.monotonic()
    refused_before_reading(check(candidate), "is 10485760 bytes; at most 1048576 are accepted")
    assert time.monotonic() - start < 5


def test_eval_check_on_a_deeply_nested_launch_plan_is_an_error_not_a_crash(candidate):
    (candidate / "launch.yaml").write_text("launches: " + "[" * 100000 + "]" * 100000 + "\n")
    r = check(candidate)
    assert r.returncode == 3, f"exit {r.returncode}\n{r.stderr}"
    assert "verdict: error (compile_error: launch.yaml" in r.stdout, r.stdout
    assert "nested deeper than" in r.stdout, r.stdout


def test_eval_check_on_a_deeply_nested_task_file_is_a_spec_error(candidate, tmp_path):
    task = tmp_path / "deep_task.json"
    task.write_text('{"kforge_task": ' + "[" * 150000 + "1" + "]" * 150000 + "}\n")
    r = check(candidate, str(task))
    assert r.returncode == 1, f"exit {r.returncode}\n{r.stderr}"
    assert r.stderr.strip().splitlines()[-1].startswith("kforge: spec_error: "), r.stderr


def test_record_skips_a_200000_deep_message_and_records_the_next(tmp_path):
    zmq = pytest.importorskip("zmq")
    msgpack = pytest.importorskip("msgpack")
    ctx = zmq.Context()
    push = ctx.socket(zmq.PUSH)
    push.setsockopt(zmq.LINGER, 0)
    push.setsockopt(zmq.SNDTIMEO, 30000)
    port = push.bind_to_random_port("tcp://127.0.0.1")
    out = tmp_path / "t.h5"
    proc = subprocess.Popen([KFORGE, "record", "--connect", f"tcp://127.0.0.1:{port}", "--out", str(out), "--count", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        push.send(b"\x91" * 200000 + b"\xc0")  # a one-element array, nested 200 000 times
        push.send(b"\x91" * 64 + b"\x01")  # shallow, but not a map
        push.send(msgpack.packb({"episode": "e1", "task": "linear_relu", "turns": []}))
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        push.close()
        ctx.term()
    assert proc.returncode == 0, f"exit {proc.returncode} (a negative code is a signal)\n{stderr}"
    assert "nested deeper than" in stderr, stderr
    assert "a trajectory is a map" in stderr, stderr
    assert "1 trajectories recorded, 2 skipped" in stdout, stdout
