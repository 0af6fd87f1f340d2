"""The server load bench's pairs (tools/bench/serve_bench.py, issue 31): `--pairs samples` is every stored
sample candidate expected to pass, episodes spread over them; a pairs file of `TASK CANDIDATE_DIR`
lines; a bad line is a one-line error. Runs the bench in its CPU mode (no GPU lanes)."""
import os
import re
import subprocess
import sys

import pytest

SOURCE_DIR = os.environ.get("KFORGE_SOURCE_DIR") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BENCH = os.path.join(SOURCE_DIR, "tools", "bench", "serve_bench.py")
KFORGE = os.environ.get("KFORGE_BIN") or os.path.join(SOURCE_DIR, "build", "tools", "kforge")
CANDIDATES = os.path.join(SOURCE_DIR, "datasets", "samples", "candidates")
sys.path.insert(0, os.path.join(SOURCE_DIR, "tests", "rollout"))
from shared_checks import figure  # noqa: E402


def bench(*args):
    return subprocess.run([sys.executable, BENCH, "--kforge", KFORGE, "--rounds", "1", *args],
                          capture_output=True, text=True, timeout=300)



def passing_candidates():
    out = []
    for t in sorted(os.listdir(CANDIDATES)):
        folder = os.path.join(CANDIDATES, t)
        for c in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
            expect = os.path.join(folder, c, "expect.yaml")
            if os.path.isfile(expect) and re.search(r"^verdict:\s*pass\b", open(expect).read(), re.M):
                out.append((t, c))
    return out


def test_the_samples_pairs_are_every_passing_candidate_and_every_episode_opens():
    want = passing_candidates()
    assert len(want) >= 20 and len({t for t, _ in want}) == 13, want
    r = bench("--pairs", "samples", "--episodes", str(len(want) + 3))
    assert r.returncode == 0, r.stdout + r.stderr
    assert figure(r.stdout, "pairs_count") == len(want) and figure(r.stdout, "tasks_count") == 13
    # Every episode opened on its own pair's task and wrote its candidate (one write per episode and round).
    assert figure(r.stdout, "episodes_count") == len(want) + 3 and figure(r.stdout, "write_file_latency_ms_p50") > 0


def test_a_pairs_file_and_its_errors(tmp_path):
    pairs = tmp_path / "pairs.txt"
    pairs.write_text(f"# two pairs\nsoftmax_rows {CANDIDATES}/softmax_rows/fused\n\n"
                     f"linear_relu {CANDIDATES}/linear_relu/tiled  # a comment\n")
    r = bench("--pairs", str(pairs), "--episodes", "4")
    assert r.returncode == 0, r.stdout + r.stderr
    assert figure(r.stdout, "pairs_count") == 2 and figure(r.stdout, "tasks_count") == 2
    for text, needle in ((f"softmax_rows {tmp_path}\n", "expected `TASK CANDIDATE_DIR`"), ("# none\n", "no pairs")):
        pairs.write_text(text)
        r = bench("--pairs", str(pairs), "--episodes", "1")
        assert r.returncode != 0 and needle in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))


def test_the_old_lane_timing_beside_the_new_one():
    # --sequential off serves with a copy of configs/eval.yaml whose timing.sequential is false (the server
    # reads and validates it at start); the figures say which arm ran.
    for arm, want in (("off", 0.0), ("on", 1.0)):
        r = bench("--pairs", "samples", "--episodes", "2", "--sequential", arm)
        assert r.returncode == 0, r.stdout + r.stderr
        assert figure(r.stdout, "sequential") == want
    r = bench("--episodes", "1", "--label", "a/b")
    assert r.returncode != 0 and "--label takes" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
