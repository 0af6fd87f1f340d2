"""The task YAML has two writers and two readers: kforge's (data_synth/task/task_spec.cpp) and the
importer's (tools/dataset/task_import/task_yaml.py, with PyYAML reading what kforge writes in
tools/dataset/synth_check.py and tools/dataset/sample_baselines.py). Here:
  - a task the importer's task_document/dump writes is read by kforge (`kforge task show`), whose
    full form, read back by PyYAML, holds the same fields;
  - kforge reads its own full form to the same text (a fixed point);
  - a file the C++ must refuse (a wrong artifact hash, an unknown key) is refused;
  - the baselines block kforge writes (`task set-baselines`) reads in Python as the numbers given."""
import base64
import copy
import hashlib
import json
import os
import subprocess
import sys
import types

import pytest
import yaml

KFORGE = os.environ.get("KFORGE_BIN", "kforge")
SOURCE_DIR = os.environ.get("KFORGE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(SOURCE_DIR, "tools", "dataset"))
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

PROGRAM = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.fc(x))


def get_inputs():
    return [torch.randn(2, 8)]


def get_init_inputs():
    return [8, 4]
'''


@pytest.fixture(scope="module")
def written():
    """(the document as task_yaml.py builds it, the YAML text task_yaml.dump writes)."""
    import torch
    from task_import import artifact, task_yaml
    torch.manual_seed(0)
    ns = {}
    exec(compile(PROGRAM, "relu_linear.py", "exec"), ns)  # noqa: S102 - the test's own program
    model = ns["Model"](8, 4)
    state = model.state_dict()
    x = torch.randn(2, 8)
    data, _ = artifact.trace(model, 1, list(state), [x, *state.values()])
    bound = 1 / 8 ** 0.5
    uniform = {"dist": "uniform", "low": -bound, "high": bound}
    analysis = types.SimpleNamespace(
        artifact=data, flops=None, min_bytes=4 * (16 + 32 + 4 + 8), dtype="float32", module_mode="train",
        init_inputs=[8, 4, 0.5, True],
        extra_shapes=[{"kind": "odd", "constants": {"batch": 3}, "inputs": [[3, 8]], "outputs": [[3, 4]]}],
        description=None, outputs=[{"name": "y0", "shape": [2, 4], "dtype": "float32"}],
        arguments=[{"name": "x0", "role": "input", "shape": [2, 8], "dtype": "float32",
                    "draw": {"dist": "normal", "mean": 0, "std": 1}},
                   {"name": "fc.weight", "role": "parameter", "shape": [4, 8], "dtype": "float32", "draw": uniform},
                   {"name": "fc.bias", "role": "parameter", "shape": [4], "dtype": "float32", "draw": uniform}])
    item = types.SimpleNamespace(stem="relu_linear", level=1, source=PROGRAM, file="level1/relu_linear.py",
                                 file_sha256=hashlib.sha256(PROGRAM.encode()).hexdigest(), row=None, ops=None,
                                 data_source=None)
    opts = {"split": "heldout", "seed": 3, "tolerance": "kforge"}
    tid = task_yaml.task_id("kernelbench", item)
    doc = task_yaml.task_document(tid, "kernelbench", item, analysis, opts)
    return doc, task_yaml.dump(doc)


def kforge(*args):
    return subprocess.run([KFORGE, *map(str, args)], capture_output=True, text=True, timeout=120)


def show(tmp_path, text, name="task.yaml"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return kforge("task", "show", path)


def test_kforge_reads_what_the_importer_writes_to_the_same_fields(tmp_path, written):
    doc, text = written
    r = show(tmp_path, text)
    assert r.returncode == 0, r.stderr
    ours, theirs = yaml.load(text, Loader=LOADER), yaml.load(r.stdout, Loader=LOADER)
    assert ours["id"] == "kb_l1_relu_linear" and ours["split"] == "heldout"
    assert set(theirs) == set(ours)
    # The one field kforge adds: provenance.seed, its default (0) where the file gives none.
    assert theirs["provenance"].pop("seed") == 0
    # The artifact's base64 is wrapped in kforge's form (a literal block): the same bytes.
    artifact = [base64.b64decode("".join(d["reference"].pop("artifact").split())) for d in (ours, theirs)]
    assert artifact[0] == artifact[1] and artifact[0][:2] == b"PK"
    for key in ours:
        assert theirs[key] == ours[key], key
    assert ours["tolerance"] == {"atol": 1e-4, "rtol": 1e-4}  # configs/eval.yaml's default profile, float32
    assert ours["init_inputs"] == [8, 4, 0.5, True]  # bools stay bools, integers integers, through kforge
    assert theirs["extra_shapes"] == [{"kind": "odd", "constants": {"batch": 3}, "inputs": [[3, 8]], "outputs": [[3, 4]]}]


def test_kforge_reads_its_own_full_form_to_the_same_text(tmp_path, written):
    first = show(tmp_path, written[1], "a.yaml")
    assert first.returncode == 0, first.stderr
    second = show(tmp_path, first.stdout, "b.yaml")
    assert second.returncode == 0, second.stderr
    assert second.stdout == first.stdout


@pytest.mark.parametrize("change, words", [
    (lambda d: d["reference"].update(sha256="0" * 64), "sha256"),
    (lambda d: d["tolerance"].update(atool=1e-3), "atool"),
    (lambda d: d.update(dtype="float64"), "float64"),
    (lambda d: d["extra_shapes"][0].update(inputs=[[3, 8, 1]]), "has rank 3"),
])
def test_kforge_refuses_a_changed_file_naming_the_field(tmp_path, written, change, words):
    from task_import import task_yaml
    doc = copy.deepcopy(written[0])
    change(doc)
    r = show(tmp_path, task_yaml.dump(doc))
    assert r.returncode != 0 and words in r.stderr, r.stdout[:200] + r.stderr


def test_python_reads_the_baselines_kforge_writes(tmp_path, written):
    """tools/dataset/synth_check.py compares a spec's baselines, read with PyYAML, with the dataset's
    columns (to 6 significant digits): what `task set-baselines` writes must read as those numbers."""
    task = tmp_path / "task.yaml"
    task.write_text(written[1], encoding="utf-8")
    record = {"eager_ms": 0.123456789, "compile_ms": 12.3456789, "gpu": "NVIDIA H200", "torch": "2.9.0",
              "cuda": "12.8", "method": "cuda-events per call", "flags": {"allow_tf32_cublas": "false"}}
    (tmp_path / "b.json").write_text(json.dumps(record))
    r = kforge("task", "set-baselines", task, "--from", tmp_path / "b.json")
    assert r.returncode == 0, r.stderr
    back = yaml.load(task.read_text(encoding="utf-8"), Loader=LOADER)
    got = back["baselines"]
    assert got["eager_ms"] == pytest.approx(record["eager_ms"], rel=1e-5)
    assert got["compile_ms"] == pytest.approx(record["compile_ms"], rel=1e-5)
    assert back["program"] == PROGRAM and back["reference"] == written[0]["reference"]  # every other line kept
    assert show(tmp_path, task.read_text(encoding="utf-8"), "again.yaml").returncode == 0
