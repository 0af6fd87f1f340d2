"""`kforge demo` on a machine without a CUDA device: one line saying so and a non-zero exit, never
a crash or a half-run episode; its usage errors are one line too. (On a GPU host the episode itself
is tested by the `gpu`-labelled episode_gpu_tests.)"""
import os
import shutil
import subprocess

import pytest

KFORGE = os.environ.get("KFORGE_BIN", "kforge")


def has_gpu():
    smi = shutil.which("nvidia-smi")
    return smi is not None and subprocess.run([smi, "-L"], capture_output=True).returncode == 0


def run(*args):
    return subprocess.run([KFORGE, *args], capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(has_gpu(), reason="a CUDA device is present: the demo would run (episode_gpu_tests cover it)")
def test_demo_without_a_gpu_says_so_in_one_line():
    r = run("demo")
    assert r.returncode == 1, r
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("kforge demo: no CUDA device on this machine"), lines[0]
    assert r.stdout == ""


def test_demo_rejects_an_unknown_option_in_one_line():
    r = run("demo", "--polcy", "x")
    assert r.returncode == 2, r
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
