"""tools/bench/ray_serve_gpu.py (issue 32's Ray-started server behind the router, played by a trainer-side
client) in its CPU mode, --gpus 0: a local Ray of its own, one server reserving one CPU, one episode per
stored sample candidate asked for; every episode is placed, answered and in the merged recording. On CPU
verify and submit answer no_gpu, so no submit ends an episode and the run says so with exit status 1
(on a GPU host the same run must end every episode with a reward: run_pending_gpu.sh ray_serve)."""
import os
import subprocess
import sys

import pytest

pytest.importorskip("ray", reason="ray is not installed (tools/setup.sh's trainers step installs it)")

SOURCE_DIR = os.environ.get("KFORGE_SOURCE_DIR") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
KFORGE = os.environ.get("KFORGE_BIN") or os.path.join(SOURCE_DIR, "build", "tools", "kforge")

from shared_checks import figure  # noqa: E402


def test_every_episode_is_placed_answered_and_recorded_and_no_submit_ends_on_cpu():
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0")
    r = subprocess.run([sys.executable, os.path.join(SOURCE_DIR, "tools", "bench", "ray_serve_gpu.py"), "--kforge", KFORGE,
                        "--gpus", "0", "--cpus", "1", "--episodes", "5"], capture_output=True, text=True, timeout=240, env=env)
    assert r.returncode == 1, r.stdout + r.stderr[-3000:]
    assert "ray_serve_gpu: 1 server(s)" in r.stdout and "{'CPU': 1.0}" in r.stdout, r.stdout
    assert figure(r.stdout, "servers_count") == 1 and figure(r.stdout, "gpus_count") == 0
    assert figure(r.stdout, "episodes_count") == 5
    assert figure(r.stdout, "recorded_count") == 5 and figure(r.stdout, "missing_from_recording_count") == 0
    assert figure(r.stdout, "submit_terminated_count") == 0 and figure(r.stdout, "verify_pass_count") == 0
