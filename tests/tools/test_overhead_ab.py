"""tools/bench/overhead_ab.sh and overhead_ab.py without a GPU (issue 31's side-by-side verify cost):
the base tree is packed with the commits named, the GPU half refuses to start without it, and the
record's ratios and spreads are those of the rounds' run records."""
import json
import os
import subprocess
import sys

import pytest

SOURCE_DIR = os.environ.get("KFORGE_SOURCE_DIR") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(SOURCE_DIR, "tools", "bench"))
import overhead_ab  # noqa: E402
import results_doc  # noqa: E402

SCRIPT = os.path.join(SOURCE_DIR, "tools", "bench", "overhead_ab.sh")


def run_record(figures):
    return {"gpu": "NVIDIA H100 80GB HBM3", "driver": "580", "cuda": "13.0", "torch": "2.11.0", "date": "2026-12-07",
            "commit": "x", "command": "kforge_eval_bench overhead", "figures": figures}


def test_the_record_is_the_rounds_means_and_their_ratio(tmp_path):
    rounds = {("base", 1): 80.0, ("base", 2): 84.0, ("new", 1): 60.0, ("new", 2): 62.0}
    for (side, r), harness in rounds.items():
        figs = {"verify_harness_gpu_ms_p50": harness, "verify_harness_compare_ms_p50": harness / 4,
                "verify_requests_count": 62, "verify_calls_p50": 9.0}
        (tmp_path / f"overhead_{side}_{r}.json").write_text(json.dumps(run_record(figs)))
    assert overhead_ab.main(["overhead_ab.py", str(tmp_path), "2"]) == 0
    doc = json.load(open(tmp_path / "overhead_ab.json"))
    assert results_doc.problems(doc) == []
    f = doc["figures"]
    assert f["base_verify_harness_gpu_ms_p50"] == pytest.approx(82.0)
    assert f["new_verify_harness_gpu_ms_p50"] == pytest.approx(61.0)
    assert f["new_over_base_verify_harness_gpu_ms_p50"] == pytest.approx(61.0 / 82.0)
    assert f["base_verify_harness_gpu_ms_p50_spread"] == pytest.approx(4.0 / 82.0)
    assert f["new_over_base_verify_harness_compare_ms_p50"] == pytest.approx(61.0 / 82.0)
    assert "new_over_base_verify_requests_count" not in f, "counts are not compared"
    assert f["rounds_base_count"] == 2 and doc["gpu"] == "NVIDIA H100 80GB HBM3"


def test_a_rounds_aa_timing_is_compared_beside_it_under_its_prefix(tmp_path):
    for side, checks in (("base", 16.0), ("new", 11.0)):
        (tmp_path / f"overhead_{side}_1.json").write_text(json.dumps(run_record({"verify_harness_gpu_ms_p50": 70.0})))
        aa = run_record({"timed_checks_ms_per_pair_p50": checks, "aa_spread_pct": 0.1})
        aa["figures"]["gpu_name"] = "not a number: left out"
        (tmp_path / f"aa_{side}_1.json").write_text(json.dumps(aa))
    assert overhead_ab.main(["overhead_ab.py", str(tmp_path), "1"]) == 0
    f = json.load(open(tmp_path / "overhead_ab.json"))["figures"]
    assert f["new_over_base_aa_timed_checks_ms_per_pair_p50"] == pytest.approx(11.0 / 16.0)
    assert f["base_aa_aa_spread_pct"] == pytest.approx(0.1)
    assert not any("gpu_name" in k for k in f)


def test_a_side_without_runs_writes_no_record(tmp_path):
    (tmp_path / "overhead_base_1.json").write_text(json.dumps(run_record({"verify_harness_gpu_ms_p50": 80.0})))
    assert overhead_ab.main(["overhead_ab.py", str(tmp_path), "2"]) == 1
    assert not (tmp_path / "overhead_ab.json").exists()


def test_the_gpu_half_needs_the_packed_base_and_a_build(tmp_path):
    repo = tmp_path / "repo"
    (repo / "tools" / "bench").mkdir(parents=True)
    subprocess.run(["cp", SCRIPT, str(repo / "tools" / "bench")], check=True)
    r = subprocess.run(["bash", str(repo / "tools" / "bench" / "overhead_ab.sh"), "build-gpu", str(tmp_path / "out")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "no .gpu/ab_base.tgz" in r.stderr, r.stderr


def test_pack_writes_the_base_tree_and_both_commits(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run(git + ["init", "-q"], check=True)
    (repo / "tools" / "bench").mkdir(parents=True)
    subprocess.run(["cp", SCRIPT, str(repo / "tools" / "bench")], check=True)
    (repo / "a.txt").write_text("base\n")
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-qm", "base"], check=True)
    (repo / "a.txt").write_text("new\n")
    subprocess.run(git + ["commit", "-qam", "new"], check=True)
    r = subprocess.run(["bash", str(repo / "tools" / "bench" / "overhead_ab.sh"), "--pack", "HEAD~1"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    base, new = (repo / ".gpu" / "ab.commits").read_text().split()
    head = subprocess.run(git + ["rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    parent = subprocess.run(git + ["rev-parse", "--short", "HEAD~1"], capture_output=True, text=True).stdout.strip()
    assert (base, new) == (parent, head)
    listing = subprocess.run(["tar", "xzOf", str(repo / ".gpu" / "ab_base.tgz"), "a.txt"], capture_output=True, text=True)
    assert listing.stdout == "base\n", "the archive holds the base commit's files"
