"""The shipped dataset's counts say the same in README.md, datasets/synth/README.md and `kforge tasks
count` on datasets/synth/dataset.h5.xz (read as shipped): tasks kept, train, heldout, rows measured;
and the samples are their own source (`source: samples`), never rows of the dataset. No GPU needed."""
import glob
import os
import re
import subprocess

import pytest

KFORGE = os.environ.get("KFORGE_BIN", "kforge")
SOURCE_DIR = os.environ.get("KFORGE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
DATASET = os.path.join(SOURCE_DIR, "datasets", "synth", "dataset.h5.xz")
NUM = r"(\d{1,3}(?:[ \u00a0\u202f,]\d{3})+|\d+)"  # 5073, 5 073, 5,073


def number(text):
    return int(re.sub(r"\D", "", text))


def count(*args):
    r = subprocess.run([KFORGE, "tasks", "count", DATASET, *args], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return int(r.stdout.strip())


def read(*path):
    with open(os.path.join(SOURCE_DIR, *path), encoding="utf-8") as f:
        return re.sub(r"\s+", " ", f.read())  # a figure may wrap onto the next line


def found(text, pattern, where):
    """Every number the pattern captures, in order; at least one match (else the sentence moved:
    update this test with it)."""
    hits = [tuple(number(g) for g in m.groups()) for m in re.finditer(pattern, text)]
    assert hits, f"{where}: no match for {pattern!r}"
    return hits


@pytest.fixture(scope="module")
def shipped():
    return {"kept": count("--status", "ok"), "served": count(), "all": count("--status", "all"),
            "train": count("--split", "train"), "heldout": count("--split", "heldout")}


def test_kforge_tasks_counts_add_up(shipped):
    assert shipped["kept"] == shipped["served"] == shipped["train"] + shipped["heldout"], shipped
    assert shipped["all"] > shipped["kept"] > 5000, shipped
    # Every row is synthesised: the samples are no rows of it.
    assert count("--source", "synth", "--status", "all") == shipped["all"]
    assert count("--source", "samples", "--status", "all") == 0
    r = subprocess.run([KFORGE, "tasks", "count", DATASET, "--source", "sample"], capture_output=True, text=True)
    assert r.returncode == 2 and "--source is one of synth, kernelbench, cuda-agent-ops, samples, other" in r.stderr, r.stderr


def test_the_readmes_say_what_kforge_tasks_counts(shipped):
    top = read("README.md")
    kept, train, heldout = found(top, rf"\*\*{NUM} tasks\*\* \({NUM} train, {NUM} heldout\)", "README.md")[0]
    assert (kept, train, heldout) == (shipped["kept"], shipped["train"], shipped["heldout"])
    for (rows, kept) in found(top, rf"all {NUM} rows measured on an H200, {NUM} tasks kept", "README.md"):
        assert (rows, kept) == (shipped["all"], shipped["kept"])
    for (kept,) in found(top, rf"the shipped dataset's {NUM} tasks", "README.md"):
        assert kept == shipped["kept"]

    ds = read("datasets", "synth", "README.md")
    kept, rows = found(ds, rf"\*\*{NUM} tasks\*\* with eager and torch.compile baselines measured on an NVIDIA H200, "
                           rf"out of {NUM} candidates", "datasets/synth/README.md")[0]
    assert (kept, rows) == (shipped["kept"], shipped["all"])
    assert found(ds, rf"\| \*\*kept \(status `ok`\)\*\* \| \*\*{NUM}\*\* \|", "datasets/synth/README.md") == [(shipped["kept"],)]
    assert found(ds, rf"\| train \| {NUM} \|", "datasets/synth/README.md") == [(shipped["train"],)]
    assert found(ds, rf"\| heldout \| {NUM} \|", "datasets/synth/README.md") == [(shipped["heldout"],)]


def test_the_payable_split_is_what_the_readme_says(shipped):
    # Issue 32: the kept tasks whose compile_headroom reaches the payable line the README states.
    ds = read("datasets", "synth", "README.md")
    (payable, kept), = found(ds, rf"\*\*{NUM} of the {NUM} kept tasks \([\d.]+ %\) are payable\*\* \(headroom >= 1.15\)",
                             "datasets/synth/README.md")
    assert kept == shipped["kept"]
    assert payable == count("--status", "ok", "--min-headroom", "1.15") < kept
    assert count("--status", "ok", "--min-headroom", "0.5") == kept  # every kept row has a headroom


def test_the_samples_are_source_samples_and_the_readme_counts_them():
    files = sorted(glob.glob(os.path.join(SOURCE_DIR, "datasets", "samples", "*.yaml")))
    assert files
    for path in files:
        with open(path) as f:
            assert re.search(r"^source: samples$", f.read(), re.M), f"{path}: not source: samples"
    (n,) = found(read("README.md"), rf"\| `datasets/samples/` \| {NUM} sample tasks", "README.md")[0]
    assert n == len(files)
