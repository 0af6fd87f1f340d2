"""Writes imported-task fixtures the way the importer (tools/dataset/task_import/) does, following the
contract of data_synth/task/TASK_FORMAT.md ("Imported tasks"): one KernelBench-style module per task,
its TorchScript artifact traced on the CPU from a wrapper that takes the inputs then the
state_dict entries as arguments and returns a tuple. The C++ tests, the `kforge tasks import
--pack-only` test and `kforge_eval_bench reference` read what it writes:

  OUT/tasks/<id>.yaml         imported tasks (relu, linear+relu, softmax, two outputs, batchnorm eval)
  OUT/skipped.jsonl           two importer-style skip lines; OUT/import_summary.json
  OUT/bad/<id>.yaml           files the C++ parser must refuse (artifact hash mismatch, a graph key)
  OUT/graph/<id>.yaml         the graph-task twins of relu, linear+relu, softmax (same shapes), for the bench

Usage: $KFORGE_PYTHON_BIN tests/data_synth/make_imported_tasks.py --out DIR
"""
import argparse
import base64
import hashlib
import io
import json
import math
import os
import textwrap

import torch
import torch.nn as nn

PROGRAMS = {
    "kb_l1_relu": ("""import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(16, 256)]


def get_init_inputs():
    return []
""", 1),
    "kb_l2_linear_relu": ("""import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.fc(x))


def get_inputs():
    return [torch.randn(32, 128)]


def get_init_inputs():
    return [128, 64]
""", 2),
    "kb_l1_softmax": ("""import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=1)


def get_inputs():
    return [torch.randn(16, 256)]


def get_init_inputs():
    return []
""", 1),
    # Two outputs; the importer's FLOP counter is taken not to cover it: no cost.flops.
    "kb_l1_two_outputs": ("""import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        s = a + b
        return s * 2.0, s.mean(dim=1)


def get_inputs():
    return [torch.rand(8, 32), torch.rand(8, 32)]


def get_init_inputs():
    return []
""", 1),
    "kb_l2_batchnorm_eval": ("""import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.bn = nn.BatchNorm1d(features)

    def forward(self, x):
        return self.bn(x)


def get_inputs():
    return [torch.randn(16, 32)]


def get_init_inputs():
    return [32]
""", 2),
}
MODE = {"kb_l2_batchnorm_eval": "eval"}  # KernelBench's default is train
NO_FLOPS = {"kb_l1_two_outputs"}


class Wrapper(nn.Module):
    """forward(*inputs, *state) = model(*inputs) with the model's state replaced by the arguments."""

    def __init__(self, model, n_inputs, keys):
        super().__init__()
        self.__dict__["model"] = model  # not a submodule: its own weights stay out of the artifact
        self.n_inputs, self.keys = n_inputs, keys

    def forward(self, *args):
        # torch.func.functional_call refuses to run under torch.jit.trace, so the state is swapped
        # in by hand (what it does inside): each entry's slot holds the argument while forward runs.
        saved = []
        for key, value in zip(self.keys, args[self.n_inputs:]):
            owner = self.model.get_submodule(key.rsplit(".", 1)[0]) if "." in key else self.model
            leaf = key.rsplit(".", 1)[-1]
            slots = owner._parameters if leaf in owner._parameters else owner._buffers
            saved.append((slots, leaf, slots[leaf]))
            slots[leaf] = value
        try:
            out = self.model(*args[:self.n_inputs])
        finally:
            for slots, leaf, old in saved:
                slots[leaf] = old
        return tuple(out) if isinstance(out, (tuple, list)) else (out,)


DTYPES = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16", torch.int64: "int64",
          torch.int32: "int32", torch.bool: "bool"}


def num(v):
    return repr(float(v)) if not float(v).is_integer() else str(int(v))


def draw_of(name, tensor, model, is_input, program):
    if is_input:
        return "{dist: uniform, low: 0, high: 1}" if "torch.rand(" in program else "{dist: normal, mean: 0, std: 1}"
    owner = model.get_submodule(name.rsplit(".", 1)[0]) if "." in name else model
    leaf = name.rsplit(".", 1)[-1]
    if isinstance(owner, nn.Linear):
        b = 1 / math.sqrt(owner.in_features)
        return f"{{dist: uniform, low: {num(-b)}, high: {num(b)}}}"
    if not tensor.is_floating_point():
        return "{dist: constant, value: 0}"  # num_batches_tracked
    # A norm's state, as kforge tasks import draws it (all equal in the module: moved around the value).
    if leaf in ("weight", "running_var"):
        return "{dist: uniform, low: 0.5, high: 1.5}"
    return "{dist: uniform, low: -0.5, high: 0.5}"  # bias, running_mean


def shape_text(t):
    return "[" + ", ".join(str(d) for d in t.shape) + "]"


def export(tid, program, level, out_dir):
    ns = {}
    exec(compile(program, tid + ".py", "exec"), ns)
    torch.manual_seed(0)
    model = ns["Model"](*ns["get_init_inputs"]())
    mode = MODE.get(tid, "train")
    model.train(mode == "train")
    inputs = ns["get_inputs"]()
    state = model.state_dict()
    keys = list(state.keys())
    args = list(inputs) + [state[k] for k in keys]
    with torch.no_grad():
        wrapper = Wrapper(model, len(inputs), keys)
        outs = wrapper(*args)
        traced = torch.jit.trace(wrapper, tuple(args), check_trace=False)
    buf = io.BytesIO()
    torch.jit.save(traced, buf)
    artifact = buf.getvalue()
    params = {k for k, _ in model.named_parameters()}
    lines = []
    for i, x in enumerate(inputs):
        lines.append(f"  - {{name: x{i}, role: input, shape: {shape_text(x)}, dtype: {DTYPES[x.dtype]}, "
                     f"draw: {draw_of('', x, model, True, program)}}}")
    for k in keys:
        role = "parameter" if k in params else "buffer"
        lines.append(f"  - {{name: {k}, role: {role}, shape: {shape_text(state[k])}, dtype: {DTYPES[state[k].dtype]}, "
                     f"draw: {draw_of(k, state[k], model, False, program)}}}")
    out_lines = [f"  - {{name: y{i}, shape: {shape_text(y)}, dtype: {DTYPES[y.dtype]}}}" for i, y in enumerate(outs)]
    min_bytes = sum(t.numel() * t.element_size() for t in list(args) + list(outs))
    cost = f"{{min_bytes: {min_bytes}}}" if tid in NO_FLOPS else f"{{flops: {sum(y.numel() for y in outs)}, min_bytes: {min_bytes}}}"
    b64 = base64.b64encode(artifact).decode()
    sha = hashlib.sha256(program.encode()).hexdigest()
    text = f"""kforge_task: 1
id: {tid}
source: kernelbench
split: train
description: KernelBench-style module {tid}
seed: 7
dtype: float32
program: |
{textwrap.indent(program, '  ')}reference:
  kind: torchscript
  module_mode: {mode}
  sha256: {hashlib.sha256(artifact).hexdigest()}
  artifact: {b64}
arguments:
{chr(10).join(lines)}
outputs:
{chr(10).join(out_lines)}
tolerance: {{atol: 0.0001, rtol: 0.0001}}
cost: {cost}
provenance: {{generator: kforge tasks import, format: kernelbench, file: "fixtures/level{level}/{tid}.py", file_sha256: {sha}, \
row: null, level: {level}, ops: null, tolerance_profile: kforge}}
"""
    with open(os.path.join(out_dir, "tasks", tid + ".yaml"), "w") as f:
        f.write(text)
    return text


GRAPHS = {
    "graph_relu": ("relu", "{x: [16, 256]}", "- {id: y, op: relu, in: [x]}", "[16, 256]"),
    "graph_linear_relu": ("linear+relu", "{x: [32, 128]}",
                          "- {id: fc, op: linear, in: [x], attrs: {out_features: 64}}\n    - {id: y, op: relu, in: [fc]}", "[32, 128]"),
    "graph_softmax": ("softmax", "{x: [16, 256]}", "- {id: y, op: softmax, in: [x], attrs: {dim: 1}}", "[16, 256]"),
}


def write_graphs(out_dir):
    for gid, (what, _, nodes, shape) in GRAPHS.items():
        with open(os.path.join(out_dir, "graph", gid + ".yaml"), "w") as f:
            f.write(f"""kforge_task: 1
id: {gid}
source: other
split: train
description: the graph twin of an imported {what}
seed: 7
dtype: float32
dims: {{}}
graph:
  inputs:
    - {{name: x, shape: {shape}}}
  nodes:
    {nodes}
  outputs: [y]
provenance: {{generator: tests/data_synth/make_imported_tasks.py}}
""")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    for sub in ("tasks", "bad", "graph"):
        os.makedirs(os.path.join(a.out, sub), exist_ok=True)
    texts = {tid: export(tid, prog, level, a.out) for tid, (prog, level) in PROGRAMS.items()}
    relu = texts["kb_l1_relu"]
    sha = relu.split("sha256: ")[1].split("\n")[0]
    with open(os.path.join(a.out, "bad", "kb_bad_sha.yaml"), "w") as f:
        f.write(relu.replace("id: kb_l1_relu", "id: kb_bad_sha").replace(sha, "0" * 64))
    with open(os.path.join(a.out, "bad", "kb_bad_dims.yaml"), "w") as f:
        bad = relu.replace("id: kb_l1_relu", "id: kb_bad_dims")
        f.write(bad.replace("dtype: float32\nprogram:", "dtype: float32\ndims: {N: 4}\nprogram:"))
    write_graphs(a.out)
    # A convolution traced with torch's default flags: cudnn.allow_tf32 = True baked into its
    # aten::_convolution, as the importer traced before session 23 (reference_torchscript.h).
    conv = nn.Conv2d(3, 4, 3)
    with torch.backends.cudnn.flags(allow_tf32=True):
        traced = torch.jit.trace(conv, torch.randn(1, 3, 8, 8))
    traced.save(os.path.join(a.out, "conv_tf32.pt"))
    skipped = [{"file": "fixtures/level1/noisy.py", "row": None, "reason": "stochastic", "detail": "two runs differ"},
               {"file": "fixtures/level1/broken.py", "row": None, "reason": "load_error", "detail": "no get_inputs"}]
    with open(os.path.join(a.out, "skipped.jsonl"), "w") as f:
        f.writelines(json.dumps(s) + "\n" for s in skipped)
    with open(os.path.join(a.out, "import_summary.json"), "w") as f:
        json.dump({"imported": len(texts), "skipped": {"stochastic": 1, "load_error": 1}, "seconds": 2.0}, f)
    print(f"wrote {len(texts)} imported tasks, 2 bad files, {len(GRAPHS)} graph twins to {a.out}")


if __name__ == "__main__":
    main()
