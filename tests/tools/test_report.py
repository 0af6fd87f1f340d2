"""The evaluation report (tools/python/kforge_client/report/) on hand-made kforge-evaluate rows
whose right answers are worked out by hand here: pass rate, fast_p at each p (strictly above p),
the geometric means (a failed episode as 1x, and over the correct ones only), the groups, the
bootstrap intervals (they hold the point estimate, shrink with more tasks, repeat with the seed),
the paired comparison and its flipped tasks; the plots are PNG files, report.md names the GPU,
driver, CUDA, torch, timing method and tolerance profile; `python -m kforge_client.report` and
`kforge report` write the same report."""
import json
import math
import os
import subprocess
import sys

import pytest

SOURCE_DIR = os.environ.get("KFORGE_SOURCE_DIR", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
sys.path.insert(0, os.path.join(SOURCE_DIR, "tools", "python"))
KFORGE = os.path.abspath(os.environ.get("KFORGE_BIN", os.path.join(SOURCE_DIR, "build", "tools", "kforge")))

from kforge_client.report import build, load_runs, write_report  # noqa: E402
from kforge_client.report import metrics as M  # noqa: E402

DEVICE = {"name": "NVIDIA H200", "arch": "sm_90a", "compute_capability": "9.0", "cuda": "13.0",
          "driver_api": "13.1", "torch": "2.9.1"}
METHOD = "CUDA events on the harness stream, L2 flushed before every call"


def row(task, verdict, se=None, sc=None, *, seed=0, dtype="float32", n_ops=1, split="heldout", level=None,
        compile_available=True, model="m", tolerance_profile=None):
    """A kforge-evaluate line as the final reward's evidence writes it (reward/episode_reward.cpp)."""
    reward = {"rule": "no_submission" if verdict is None else verdict, "verdict": verdict}
    if verdict == "pass":
        reward["eager"] = {"speedup": {"point": se, "lo": se * 0.95, "hi": se * 1.05}, "beats": se > 1.05}
        if compile_available:
            reward["torch_compile"] = {"available": True, "speedup": {"point": sc}, "beats": sc > 1.05,
                                       "stored_gpu": "NVIDIA H200", "rescale": "stored torch.compile time x (eager now / eager stored)"}
        else:
            reward["torch_compile"] = {"available": False, "why": "no stored torch.compile time", "beats": False}
    return {"task": task, "seed": seed, "model": model, "episode_reward": 1.0 if verdict == "pass" else -1.0,
            "termination_reason": "submitted", "turns": 3, "reward": reward,
            "server": {"version": "0.9.0", "gpus": ["NVIDIA H200"]},
            "task_meta": {"split": split, "source": "synth", "dtype": dtype, "n_ops": n_ops, "level": level,
                          "tolerance_profile": tolerance_profile,
                          "tolerance": {"atol": 1e-4, "rtol": 1e-4} if dtype == "float32" else {"atol": 1e-2, "rtol": 1e-2}},
            "judge": {"verdict": verdict, "device": DEVICE, "timing_method": METHOD} if verdict else {}}


def run_a_rows():
    return [
        row("t2", "fail", dtype="float32", n_ops=2, split="train"),  # replaced by the later line of (t2, 0)
        row("t1", "pass", 2.0, 1.6, n_ops=1, split="train"),
        row("t2", "pass", 1.2, 0.9, n_ops=2, split="train"),
        row("t3", "pass", 0.8, 0.5, dtype="bfloat16", n_ops=2),
        row("t4", "fail", dtype="bfloat16", n_ops=3),
        row("t5", "cheat", n_ops=1),
        row("t6", None, dtype="float16", level=2),
        {"task": "t7", "seed": 0, "model": "m", "error": "URLError: down"},  # could not be played
        dict(row("t8", "pass", 3.0, 3.0), no_gpu=True),  # played without a GPU lane: not judged
    ]


def run_b_rows():
    return [
        row("t1", "fail", n_ops=1, split="train"),
        row("t2", "pass", 0.9, 0.7, n_ops=2, split="train"),
        row("t3", "pass", 1.3, 1.2, dtype="bfloat16", n_ops=2),
        row("t4", "pass", 1.1, 0.8, dtype="bfloat16", n_ops=3),
        row("t5", "pass", 1.5, 1.4, n_ops=1),
        row("t6", "fail", dtype="float16", level=2),
        row("t9", "pass", 5.0, 5.0),  # only in B: not paired
    ]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + '{"task": "cut short')  # a killed run's last line
    return str(path)


def values(res):
    return {k: v["value"] for k, v in res["metrics"].items()}


@pytest.fixture
def files(tmp_path):
    return write_jsonl(tmp_path / "A.jsonl", run_a_rows()), write_jsonl(tmp_path / "B.jsonl", run_b_rows())


def close(a, b):
    return a is not None and b is not None and abs(a - b) < 1e-12


def test_table_one_metrics_and_fast_p_by_hand(files):
    doc = build(load_runs([files[0]]), resamples=200)
    rep = doc["runs"][0]
    assert (rep["episodes"], rep["judged"], rep["unjudged"], rep["errors"]) == (7, 6, 1, 1)
    assert rep["verdicts"] == {"pass": 3, "fail": 1, "cheat": 1, "no_submission": 1}
    v = values(rep["overall"])
    assert v["pass_rate"] == 3 / 6 and v["fast_0"] == 3 / 6
    assert v["faster_than_eager_rate"] == 2 / 6 and v["faster_than_compile_rate"] == 1 / 6 and v["cheat_rate"] == 1 / 6
    # fast_p counts a speedup strictly above p: 2.0 is not fast_2.
    assert (v["fast_0.5"], v["fast_1"], v["fast_1.5"], v["fast_2"]) == (3 / 6, 2 / 6, 1 / 6, 0.0)
    assert close(v["geomean_speedup_eager"], (2.0 * 1.2 * 0.8) ** (1 / 6))  # three failures at 1x
    assert close(v["geomean_speedup_eager_correct"], (2.0 * 1.2 * 0.8) ** (1 / 3))
    assert close(v["geomean_speedup_compile"], (1.6 * 0.9 * 0.5) ** (1 / 6))
    assert close(v["geomean_speedup_compile_correct"], (1.6 * 0.9 * 0.5) ** (1 / 3))
    assert rep["overall"]["metrics"]["geomean_speedup_eager_correct"]["n"] == 3


def test_groups_by_level_or_operator_count_dtype_and_split(files):
    rep = build(load_runs([files[0]]), resamples=0)["runs"][0]
    ops = rep["groups"]["level_or_ops"]
    assert sorted(ops) == ["1 op", "2 ops", "3 ops", "level 2"]
    assert values(ops["1 op"])["pass_rate"] == 1 / 2 and values(ops["2 ops"])["pass_rate"] == 1.0
    assert values(ops["2 ops"])["fast_1"] == 1 / 2 and values(ops["3 ops"])["pass_rate"] == 0.0
    assert ops["level 2"]["episodes"] == 1 and values(ops["level 2"])["geomean_speedup_eager_correct"] is None
    dt = rep["groups"]["dtype"]
    assert values(dt["float32"])["pass_rate"] == 2 / 3 and values(dt["bfloat16"])["pass_rate"] == 1 / 2
    assert values(dt["float16"])["pass_rate"] == 0.0
    sp = rep["groups"]["split"]
    assert values(sp["train"])["pass_rate"] == 1.0 and values(sp["heldout"])["pass_rate"] == 1 / 4
    assert close(values(sp["train"])["geomean_speedup_eager"], math.sqrt(2.0 * 1.2))
    assert ops["1 op"]["metrics"]["pass_rate"]["lo"] is None  # resamples 0: no intervals


def test_a_correct_submission_without_a_compile_baseline_is_left_out_of_the_compile_geomean(tmp_path):
    path = write_jsonl(tmp_path / "r.jsonl", [row("a", "pass", 2.0, 4.0), row("b", "pass", 3.0, compile_available=False),
                                              row("c", "fail")])
    v = values(build(load_runs([path]), resamples=0)["runs"][0]["overall"])
    assert close(v["geomean_speedup_compile"], 4.0 ** (1 / 2)) and v["geomean_speedup_compile_correct"] == 4.0
    assert v["faster_than_compile_rate"] == 1 / 3 and close(v["geomean_speedup_eager"], 6.0 ** (1 / 3))


def pattern(k):
    """Ten tasks, four correct (speedups 0.5, 1.2, 2, 3), repeated k times under new names."""
    out = []
    for i in range(k):
        for j, (verdict, s) in enumerate([("pass", 0.5), ("pass", 1.2), ("pass", 2.0), ("pass", 3.0)] + [("fail", None)] * 6):
            out.append(row(f"r{i}_t{j}", verdict, s, s))
    return out


def test_intervals_hold_the_estimate_shrink_with_more_tasks_and_repeat_with_the_seed(tmp_path):
    small = write_jsonl(tmp_path / "small.jsonl", pattern(2))
    big = write_jsonl(tmp_path / "big.jsonl", pattern(32))
    s = build(load_runs([small]), resamples=500, seed=3)["runs"][0]["overall"]["metrics"]
    b = build(load_runs([big]), resamples=500, seed=3)["runs"][0]["overall"]["metrics"]
    for name in M.metric_names():
        for m in (s[name], b[name]):
            if m["value"] is not None:
                assert m["lo"] <= m["value"] <= m["hi"], (name, m)
    assert s["pass_rate"]["value"] == b["pass_rate"]["value"] == 0.4
    for name in ("pass_rate", "fast_1", "geomean_speedup_eager"):
        assert b[name]["hi"] - b[name]["lo"] < 0.5 * (s[name]["hi"] - s[name]["lo"]), name
    again = build(load_runs([small]), resamples=500, seed=3)["runs"][0]["overall"]["metrics"]
    other = build(load_runs([small]), resamples=500, seed=4)["runs"][0]["overall"]["metrics"]
    assert again == s and other != s


def test_seeds_of_a_task_are_resampled_together(tmp_path):
    # Two tasks, each with four seeds all alike: every resample's pass rate is 0, 1/2 or 1.
    rows = [row("p", "pass", 2.0, 2.0, seed=k) for k in range(4)] + [row("f", "fail", seed=k) for k in range(4)]
    runs = load_runs([write_jsonl(tmp_path / "s.jsonl", rows)])
    tasks = sorted({e["task"] for e in runs[0].judged})
    sums = M.task_sums(runs[0].judged, tasks)
    w = M.task_weights(len(tasks), 300, 0)
    boot = M._finish("pass_rate", w @ sums["pass_rate"][0], w @ sums["pass_rate"][1])
    assert set(boot.tolist()) <= {0.0, 0.5, 1.0} and len(set(boot.tolist())) == 3


def test_paired_comparison_and_flipped_tasks(files):
    doc = build(load_runs(list(files)), resamples=400)
    c = doc["comparisons"][0]
    assert (c["a"], c["b"], c["pairs"], c["tasks"], c["only_in_a"], c["only_in_b"]) == ("A", "B", 6, 6, 0, 1)
    m = c["metrics"]
    assert m["pass_rate"]["a"] == 3 / 6 and m["pass_rate"]["b"] == 4 / 6 and close(m["pass_rate"]["diff"], 1 / 6)
    assert close(m["fast_1"]["diff"], 3 / 6 - 2 / 6) and close(m["fast_2"]["diff"], 0.0)
    ratio = (0.9 * 1.3 * 1.1 * 1.5) ** (1 / 6) / (2.0 * 1.2 * 0.8) ** (1 / 6)
    assert close(m["geomean_speedup_eager"]["ratio"], ratio)
    assert m["general_rate"]["diff"] is None, "no task of these rows has other shapes: undefined, not 0"
    for name, e in m.items():
        if e["diff"] is None:
            continue
        assert e["diff_lo"] <= e["diff"] + 1e-12 and e["diff"] <= e["diff_hi"] + 1e-12, (name, e)
    assert close(m["cheat_rate"]["diff"], -1 / 6) and m["cheat_rate"]["diff_lo"] < 0  # t5: cheat in A, pass in B
    f = {k: [i["task"] for i in v] for k, v in c["flipped"].items()}
    assert f == {"pass_to_fail": ["t1"], "fail_to_pass": ["t4", "t5"], "crossed_1x_up": ["t3", "t4", "t5"],
                 "crossed_1x_down": ["t1", "t2"]}
    # Paired: the same resampled tasks for both runs, so identical runs differ by exactly 0.
    same = build(load_runs([files[0], files[0]]), resamples=100)["comparisons"][0]["metrics"]
    assert all(e["diff_lo"] == e["diff_hi"] == 0 for e in same.values() if e["diff"] is not None)


def with_shapes(r, status):
    """The row of a task with other shapes, its submission `status` there (the reward's evidence);
    not_general under shapes.not_general: penalty is rule not_general with no timing evidence."""
    r["reward"]["shapes"] = {"status": status, "trials": [], "note": "", "wall_ms": 1.0}
    if status == "not_general":
        r["reward"] = {"rule": "not_general", "verdict": "pass", "shapes": r["reward"]["shapes"]}
        r["episode_reward"] = -1.0
    return r


def test_generalises_to_other_shapes_beside_the_pass_rate_and_in_the_comparison(tmp_path):
    a = [with_shapes(row("s1", "pass", 2.0, 1.5), "general"), with_shapes(row("s2", "pass", 3.0, 2.0), "not_general"),
         with_shapes(row("s3", "fail"), "not_tested"), row("s4", "pass", 1.1, 1.0)]  # s4: no other shapes
    b = [with_shapes(row("s1", "pass", 2.0, 1.5), "general"), with_shapes(row("s2", "pass", 1.5, 1.0), "general"),
         with_shapes(row("s3", "pass", 1.2, 1.0), "general"), row("s4", "pass", 1.1, 1.0)]
    paths = [str(write_jsonl(tmp_path / "A.jsonl", a)), str(write_jsonl(tmp_path / "B.jsonl", b))]
    doc = write_report(paths, str(tmp_path / "rep"), resamples=200)
    va, vb = values(doc["runs"][0]["overall"]), values(doc["runs"][1]["overall"])
    assert va["pass_rate"] == 3 / 4, "right at its own shape is correct: the shapes are a metric of their own"
    assert va["general_rate"] == 1 / 2 and doc["runs"][0]["overall"]["metrics"]["general_rate"]["n"] == 2
    assert va["faster_than_eager_rate"] == 2 / 4, "the penalised submission has no speed tier"
    assert vb["general_rate"] == 1.0
    m = doc["comparisons"][0]["metrics"]["general_rate"]
    assert close(m["diff"], 0.5) and m["diff_lo"] <= m["diff"] <= m["diff_hi"]
    assert "| generalises to other shapes (of the correct ones on tasks with other shapes) | 50.0 % |" in (
        tmp_path / "rep" / "report.md").read_text()


def test_the_best_versions_speedup_beside_the_last_versions(tmp_path):
    best = row("b1", "pass", 3.0, 2.0)  # rewarded by a better verified version; its submission was 1.5x
    best["reward"]["last"] = {"rule": "correct", "reward": 1, "eager": {"speedup": {"point": 1.5}}}
    broken = row("b2", "pass", 2.0, 1.0)  # ... and here the submission itself was wrong
    broken["reward"]["last"] = {"rule": "verify_fail", "reward": -1}
    plain = row("b3", "pass", 1.2, 1.0)  # the submission's own reward: both figures are its speedup
    doc = build(load_runs([write_jsonl(tmp_path / "A.jsonl", [best, broken, plain])]), resamples=100)
    v = values(doc["runs"][0]["overall"])
    assert close(v["geomean_speedup_eager"], (3.0 * 2.0 * 1.2) ** (1 / 3))
    assert close(v["geomean_speedup_eager_last"], (1.5 * 1.0 * 1.2) ** (1 / 3)), "the wrong submission counts as 1x"


def is_png(path):
    import matplotlib.image
    with open(path, "rb") as f:
        if f.read(8) != b"\x89PNG\r\n\x1a\n":
            return False
    img = matplotlib.image.imread(path)
    return img.ndim == 3 and img.shape[0] > 100 and img.shape[1] > 100


def test_report_folder_plots_markdown_and_json(files, tmp_path):
    out = tmp_path / "report"
    doc = write_report(list(files), str(out), resamples=100)
    names = sorted(os.listdir(out))
    assert names == ["compare_A_vs_B.png", "fast_p_A.png", "fast_p_B.png", "report.json", "report.md",
                     "speedups_A.png", "speedups_B.png"]
    assert all(is_png(out / n) for n in names if n.endswith(".png"))
    assert json.loads((out / "report.json").read_text()) == json.loads(json.dumps(doc))
    md = (out / "report.md").read_text()
    for text in ("GPU: NVIDIA H200 (driver API 13.1, CUDA 13.0, torch 2.9.1)", f"timing method: {METHOD}",
                 "tolerance profile: default", "float32: atol 0.0001, rtol 0.0001", "bfloat16: atol 0.01, rtol 0.01",
                 "B = 100 resamples, seed 0", "| pass rate (correct final submission) | 50.0 % |",
                 "| fast_2 (correct and speedup over eager > p) | 0.0 % |", "kforge server version: 0.9.0",
                 "- pass -> fail: 1: t1", "- fail -> pass: 2: t4", "![comparison](compare_A_vs_B.png)",
                 "### By KernelBench level or operator count", "| level 2 | 1 | 1 |", "torch.compile baseline: measured on NVIDIA H200"):
        assert text in md, text
    env = doc["runs"][0]["environment"]
    assert env["devices"] == [{"gpu": "NVIDIA H200", "driver": "13.1", "cuda": "13.0", "torch": "2.9.1", "episodes": 6}]


def test_no_judged_episode_says_so_and_defines_nothing(tmp_path):
    rows = [dict(row(f"t{i}", None), no_gpu=True, judge={}) for i in range(3)]
    out = tmp_path / "r"
    doc = write_report([write_jsonl(tmp_path / "n.jsonl", rows)], str(out), resamples=50)
    rep = doc["runs"][0]
    assert (rep["episodes"], rep["judged"], rep["unjudged"]) == (3, 0, 3)
    assert all(m["value"] is None for m in rep["overall"]["metrics"].values())
    md = (out / "report.md").read_text()
    assert "NOTHING COULD BE JUDGED" in md and "GPU: none recorded" in md and is_png(out / "fast_p_n.png")


def cli(cmd, tmp_path, *args):
    # kforge report finds the project's Python as the scripts do: KFORGE_PYTHON_BIN (ctest sets it).
    pythonpath = os.pathsep.join(filter(None, [os.path.join(SOURCE_DIR, "tools", "python"), os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, PYTHONPATH=pythonpath,
               KFORGE_PYTHON_BIN=os.environ.get("KFORGE_PYTHON_BIN", sys.executable))
    return subprocess.run([*cmd, *args], capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)


def test_python_module_and_kforge_report_write_the_same_report(files, tmp_path):
    a = cli([sys.executable, "-m", "kforge_client.report"], tmp_path, *files, "--out", "py", "--resamples", "200")
    assert a.returncode == 0, a.stderr
    assert "A: 6 judged of 7 episode(s), pass rate 50.0 %, fast_1 33.3 %" in a.stdout, a.stdout
    b = cli([KFORGE, "report"], tmp_path, *files, "--out", "cpp", "--resamples", "200")
    assert b.returncode == 0, b.stdout + b.stderr
    ja, jb = (json.loads((tmp_path / d / "report.json").read_text()) for d in ("py", "cpp"))
    assert ja["runs"] == jb["runs"] and ja["comparisons"] == jb["comparisons"]
    usage = cli([KFORGE, "report"], tmp_path, "--help")
    assert usage.returncode == 0 and usage.stdout.startswith("usage: kforge report "), usage.stdout
    missing = cli([KFORGE, "report"], tmp_path, "nowhere.jsonl", "--out", "x")
    assert missing.returncode == 2 and "kforge report: " in missing.stderr and "nowhere.jsonl" in missing.stderr
    listed = cli([KFORGE, "--help"], tmp_path)
    assert "report" in listed.stdout, listed.stdout


def test_the_profile_imported_tasks_name_is_the_one_reported():
    from kforge_client.report.rows import environment

    class Run:  # what environment() reads of a run: its played rows
        played_rows = [row("a", "pass", 2.0, 1.5, tolerance_profile="cuda-agent"),
                       row("b", "fail", tolerance_profile="cuda-agent")]
    assert environment(Run())["tolerance_profile"] == "cuda-agent"
    Run.played_rows.append(row("c", "fail"))  # a task that names none: the tolerances are matched instead
    assert environment(Run())["tolerance_profile"] != "cuda-agent"


def test_tasks_the_server_left_out_are_reported_for_the_evaluated_sources_only(tmp_path):
    """The server's `left_out` (skipped by the import, rejected by the GPU stage) in the rows' server
    block: the report names what no metric counts, for the sources the run played, and says 'none'
    when the rows say nothing was left out; rows from before the field say nothing."""
    from kforge_client.report.markdown import _left_out
    from kforge_client.report.rows import environment
    left = [{"source": "synth", "stage": "import", "reason": "stochastic", "rows": 2},
            {"source": "synth", "stage": "import", "reason": "load_error", "rows": 1},
            {"source": "synth", "stage": "gpu_stage", "reason": "eager_failed", "rows": 1},
            {"source": "kernelbench", "stage": "gpu_stage", "reason": "eager_failed", "rows": 7}]
    rows = [row("a", "pass", 2.0, 1.5), row("b", "fail")]
    for r in rows:
        r["server"]["left_out"] = left

    class Run:
        played_rows = rows
    got = environment(Run())["left_out"]
    assert got == sorted(left[:3], key=lambda x: (x["source"], x["stage"], x["reason"]))  # no kernelbench episode played
    md = "\n".join(_left_out(got))
    assert "synth: 1 rejected by the GPU stage (eager_failed 1); 3 not imported (load_error 1, stochastic 2)" in md, md
    for r in rows:
        r["server"]["left_out"] = []
    assert environment(Run())["left_out"] == [] and _left_out([]) == ["- tasks of these sources the server left out: none"]
    for r in rows:
        del r["server"]["left_out"]
    assert environment(Run())["left_out"] is None and _left_out(None) == []
    path = write_jsonl(tmp_path / "L.jsonl", [dict(r, server=dict(r["server"], left_out=left)) for r in rows])
    out = tmp_path / "rep"
    write_report([path], str(out), resamples=50)
    assert "3 not imported (load_error 1, stochastic 2)" in (out / "report.md").read_text()


def test_malformed_lines_are_counted_and_named_never_a_traceback(tmp_path):
    good = row("t1", "pass", 2.0, 1.5)
    bad = [
        '{"task": "t2", "seed": 0, "mod',  # a line cut short in the middle of the file
        "[1, 2]", '"just text"', "null",  # JSON, but not objects
        json.dumps(dict(row("t3", "fail"), task=["t3"])),  # unhashable task: a TypeError in the Run before
        json.dumps(dict(row("t4", "fail"), server={"gpus": 5})),
        json.dumps(dict(row("t5", "fail"), task_meta={"dtype": "float32", "tolerance": {"atol": "1e-4", "rtol": 1}})),
        json.dumps(dict(row("t6", "fail"), server={"left_out": [{"source": "synth", "rows": "many"}]})),
        json.dumps(dict(row("t7", "fail"), judge={"timing_method": {"a": 1}})),
        "[" * 100000 + "]" * 100000,  # deeper than the JSON decoder's recursion
        json.dumps({"seed": 0, "model": "m"}),  # no task
    ]
    path = tmp_path / "bad.jsonl"
    path.write_bytes((json.dumps(good) + "\n" + "\n".join(bad) + "\n").encode() + b"\xff\xfe not utf-8\n" +
                     b'{"task": "t9", "seed": 0')  # and a killed run's last line
    r = cli([KFORGE, "report"], tmp_path, str(path), "--out", "out", "--resamples", "20")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert f"{path}: 13 line(s) not read as episodes, counted by no metric (line 2: not JSON; " \
           "line 3: a JSON list, not an object; line 4: a JSON str, not an object" in r.stderr, r.stderr
    doc = json.loads((tmp_path / "out" / "report.json").read_text())
    (unread,) = doc["unread_lines"]
    assert unread["lines"] == 13 and len(unread["first"]) == 5
    assert unread["first"][3] == {"line": 5, "why": "a JSON NoneType, not an object"}
    assert unread["first"][4]["why"].startswith("task is list")
    assert doc["runs"][0]["episodes"] == 1  # the good line still counts
    md = (tmp_path / "out" / "report.md").read_text()
    assert "**13 line(s) of " in md and "not read as episodes** (counted by no metric): line 2: not JSON" in md
    from kforge_client.report.rows import read_jsonl_checked
    whys = [u["why"] for u in read_jsonl_checked(str(path))[1]]
    assert whys[5:] == ["server.gpus is int, not a list", 'task_meta.tolerance.atol is str "1e-4"',
                        'server.left_out[0].rows is str "many"', "judge.timing_method is dict {\"a\": 1}",
                        "not JSON (nested too deep)", "no task", "not UTF-8",
                        "cut short (the last line has no newline: a run killed while writing it)"], whys


def test_a_model_name_cannot_inject_markdown_into_the_report(tmp_path):
    evil = "m\n# Injected heading\n![img](http://example.com/x.png) <script>x</script> | cell | $x^{$"
    rows = [row("t1", "pass", 2.0, 1.5, model=evil), row("t1", "fail", model="plain")]
    out = tmp_path / "out"
    write_report([write_jsonl(tmp_path / "r.jsonl", rows)], str(out), resamples=20)  # two models: two runs
    md = (out / "report.md").read_text()
    headings = [x for x in md.splitlines() if x.startswith("#")]
    assert [h.split(" ")[0] for h in headings if "Injected" in h] == ["##", "##"], headings  # its run, the comparison
    assert all(r"m \# Injected heading" in h for h in headings if "Injected" in h), headings
    assert "\n# Injected" not in md and "![img](" not in md and "<script>" not in md
    assert r"\# Injected heading \!\[img\](http://example.com/x.png) \<script\>x\</script\> \| cell \|" in md
    assert all(is_png(out / n) for n in os.listdir(out) if n.endswith(".png"))  # "$x^{$" is no mathtext


def test_kernelbench_fast_p_per_level_counts_left_out_problems_as_unsolved(tmp_path):
    """KernelBench's own table: per level, fast_p over every problem of the level, where the
    problems the server left out of that level (the import's skips, the GPU stage's rejections) are
    unsolved; with two seeds a task scores the share of its episodes that pass."""
    left_out = [{"source": "synth", "stage": "import", "reason": "needs_network", "rows": 20, "level": 4},
                {"source": "synth", "stage": "import", "reason": "stochastic", "rows": 1, "level": 1},
                {"source": "synth", "stage": "gpu_stage", "reason": "nondeterministic_gpu", "rows": 2, "level": 1},
                {"source": "synth", "stage": "gpu_stage", "reason": "eager_failed", "rows": 1, "level": 2}]
    rows = [row("a", "pass", 2.5, 1.0, level=1), row("b", "pass", 0.7, 0.5, level=1), row("c", "fail", level=1),
            row("d", "pass", 1.2, 1.0, level=2, seed=0), row("d", "fail", level=2, seed=1), row("e", "cheat", level=2),
            row("f", "pass", 3.0, 2.0)]  # no level: not in KernelBench's table
    for r in rows:
        r["server"]["left_out"] = left_out
    write_jsonl(tmp_path / "kb.jsonl", rows)
    doc = write_report([str(tmp_path / "kb.jsonl")], str(tmp_path / "out"), resamples=50)
    levels = {lv["level"]: lv for lv in doc["runs"][0]["kernelbench"]}
    assert sorted(levels) == [1, 2], levels  # level 4: nothing judged there, no score
    one, two = levels[1], levels[2]
    assert (one["problems"], one["played_tasks"], one["left_out"]) == (6, 3, 3)
    assert one["fast_p"] == {"0": 2 / 6, "0.5": 2 / 6, "0.8": 1 / 6, "1": 1 / 6, "1.5": 1 / 6, "2": 1 / 6}
    assert math.isclose(one["geomean_speedup_correct"], math.sqrt(2.5 * 0.7))
    assert (two["problems"], two["left_out"]) == (3, 1)
    assert two["fast_p"]["0"] == pytest.approx(0.5 / 3) and two["fast_p"]["1"] == pytest.approx(0.5 / 3)
    assert two["fast_p"]["1.5"] == 0
    md = (tmp_path / "out" / "report.md").read_text()
    assert "### KernelBench's own metrics per level" in md
    assert "| 1 | 6 | 3 | 0.333 | 0.333 | 0.167 | 0.167 | 0.167 | 0.167 | 1.323x |" in md, md
    # The left-out list names each reason once, summed over the levels it spans.
    assert ("  - synth: 3 rejected by the GPU stage (eager_failed 1, nondeterministic_gpu 2); "
            "21 not imported (needs_network 20, stochastic 1)") in md, md
