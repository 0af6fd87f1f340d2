"""The policy is shown the function the C++ reference computes.

For every registered operator (on its example inputs) and for composed graphs (every shipped
sample at its check dimensions and the graphs in tests/data_synth/graphs/), `kforge task dump`
writes the rendered PyTorch program, the drawn arguments and the C++ reference's outputs (libtorch,
CPU). Here pip torch runs that program on the same arguments and the outputs must agree within the
task's tolerance; the program's own get_inputs() must produce the argument shapes and dtypes, and
its state_dict must list the parameters in the argument order.
"""
import glob
import importlib.util
import os
import tempfile

import pytest
import torch

from kforge_dump import SOURCE_DIR, read_safetensors, run

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False

_DUMP = tempfile.mkdtemp(prefix="kforge_consistency_")
_TASKS = sorted(glob.glob(os.path.join(SOURCE_DIR, "datasets", "samples", "*.yaml"))) + \
    sorted(glob.glob(os.path.join(SOURCE_DIR, "tests", "data_synth", "graphs", "*.yaml"))) + \
    [p for p in os.environ.get("KFORGE_CONSISTENCY_TASKS", "").split(os.pathsep) if p]  # test_synth.py adds synthesised ones
run("task", "dump", "--all-ops", "--check-dims", "--trial", "3", "--salt", "17", "--out", _DUMP, *_TASKS)
_DIRS = sorted(os.listdir(_DUMP))


def load_program(path):
    spec = importlib.util.spec_from_file_location("task_program_" + os.path.basename(os.path.dirname(path)), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_dump_covers_every_operator_and_every_task():
    ops = [line.split()[0] for line in run("ops").stdout.splitlines()[:-1]]
    assert len(ops) >= 60
    for op in ops:
        assert "op_" + op in _DIRS
    assert len(_DIRS) == len(ops) + len(_TASKS)


@pytest.mark.parametrize("name", _DIRS)
def test_rendered_program_matches_cpp_reference(name):
    d = os.path.join(_DUMP, name)
    program = load_program(os.path.join(d, "program.py"))
    args, meta = read_safetensors(os.path.join(d, "args.safetensors"))
    expected, out_meta = read_safetensors(os.path.join(d, "outputs.safetensors"))
    input_names = meta["inputs"].split(",")
    n_in = len(input_names)
    assert [n for n, _ in args[:n_in]] == input_names

    model = program.Model(*program.get_init_inputs())
    # The argument list after the inputs is the module's state_dict, in order.
    state_names = list(model.state_dict().keys())
    assert state_names == [n for n, _ in args[n_in:]]
    model.load_state_dict(dict(args[n_in:]), strict=True)
    for key, value in model.state_dict().items():
        assert value.dtype == dict(args)[key].dtype, key

    # get_inputs() draws tensors of the argument shapes and dtypes.
    drawn = program.get_inputs()
    assert len(drawn) == n_in
    for t, (n, a) in zip(drawn, args[:n_in]):
        assert t.shape == a.shape and t.dtype == a.dtype, n

    atol, rtol = float(out_meta["atol"]), float(out_meta["rtol"])
    for mode in ("train", "eval"):  # the rendered function must not depend on the module's mode
        model.train(mode == "train")
        with torch.no_grad():
            out = model(*[a for _, a in args[:n_in]])
        outs = out if isinstance(out, tuple) else (out,)
        assert len(outs) == len(expected)
        for got, (oname, want) in zip(outs, expected):
            assert got.shape == want.shape, oname
            assert got.dtype == want.dtype, oname
            g, w = got.double(), want.double()
            bad = ((g - w).abs() > atol + rtol * w.abs()).sum().item()
            assert bad == 0, f"{name}/{oname} ({mode}): {bad} of {w.numel()} elements differ; " \
                             f"max abs error {(g - w).abs().max().item():.3e}"
