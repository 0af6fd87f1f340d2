"""The artifact check of an imported task (issue 29): its TorchScript reference against the original
module, eagerly, at the task's own (real) size, on the same fresh draws of every argument.

Why. `kforge tasks import` (tools/dataset/task_import/README.md, "Sizes") checks each artifact against
eager where the CPU can afford values. Where it is traced says how far that goes (imported.jsonl's
`trace_tier`):
  module  traced and checked at the module's own size, with values: nothing left to check;
  A, B, A1  traced at a small size S1 and checked there and at a second size S2; at the real size
          only its output shapes were checked (on the meta device). A value only the real size
          reaches (a size the trace froze that S2 did not move, a branch on a size) was never seen;
  M       traced on the meta device at the real size: no value of this artifact was ever computed.
So `--artifact-check auto` (the default) checks every imported row whose tier is not `module`, and
every imported row whose tier is not known (no imported.jsonl, or a row it does not list); `all`
checks the `module` rows too (an artifact that took a CPU-only branch), `off` none.

How. The module is the probe's (the program exactly as imported, built on the device at its own size,
in its own module mode). Every argument of the task (its inputs, then its state_dict entries) is
drawn on the device from the task's draws (the spec's `arguments`); the module runs with its state
swapped for the drawn tensors (as the importer's running.state_swapped: in-place updates such as a
train-mode BatchNorm's land in copies) and the Python scalars of get_inputs() at their places; the
artifact runs on copies of the same tensors as kforge runs it (data_synth/reference/reference_torchscript.cpp:
graph-executor optimisation off, inference mode, the task's module mode). Each output must have the
eager one's shape and dtype, the same non-finite elements, and no element outside the task's
tolerance (checks.failing_fraction, kforge's rule, eager as the reference). A failure rejects the
row: `artifact_failed` (the artifact does not load or raises), `artifact_mismatch` (anything else).
"""
import base64
import io
import json
import os
import shutil
import sys
import tempfile
import time

from .checks import CHUNK, failing_fraction, finite_masks
from .common import InputError, error_line, run_kforge
from .torch_env import as_outputs

MODES = ("auto", "all", "off")
OWN_SIZE_TIER = "module"  # traced and checked at the module's own size, with values
NORMAL_BOUND = 3.4641016151377544  # kforge's normal stays within +-sqrt(12) std (data_synth/task/draw.h)


def read_tiers(path):
    """{task id: trace_tier} from an importer's imported.jsonl ({} when the file is absent)."""
    if not path or not os.path.exists(path):
        return {}
    tiers = {}
    with open(path) as f:
        for line in f:
            if line.strip():
                row = json.loads(line)
                if row.get("id") and row.get("trace_tier"):
                    tiers[row["id"]] = row["trace_tier"]
    return tiers


def wanted(task, mode, tiers):
    """Whether the artifact check runs on this task (see the module's docstring)."""
    if mode == "off" or not task.get("imported"):
        return False
    return mode == "all" or tiers.get(task["id"]) != OWN_SIZE_TIER


class Specs:
    """The task specs (their `arguments` and `reference`), as kforge stores them: one
    `kforge tasks export --specs` of the dataset into a temporary folder, at the first need; or the
    folder such an export wrote beforehand (--specs: a host without a kforge build)."""

    def __init__(self, dataset, given=None):
        self.dataset = dataset
        self.dir = given
        self.own = not given

    def get(self, task_id):
        import yaml
        if self.dir is None:
            self.dir = tempfile.mkdtemp(prefix="kforge-specs-")
            run_kforge("tasks", "export", self.dataset, "--status", "all", "--format", "kernelbench", "--specs",
                       "--out", self.dir)
        path = os.path.join(self.dir, task_id + ".yaml")
        if not os.path.exists(path):
            raise InputError(f"{self.dir}: no spec of task {task_id} (kforge tasks export --specs of {self.dataset})")
        with open(path) as f:
            return yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))

    def close(self):
        if self.dir and self.own:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None


def sample(torch, draw, shape, dtype, gen, device):
    """One tensor of kforge's draw grammar (normal, uniform, randint, constant), drawn on the device."""
    d = draw["dist"]
    if d == "constant":
        return torch.full(shape, float(draw["value"]), dtype=torch.float64, device=device).to(dtype)
    if d == "randint":
        return torch.randint(int(draw["low"]), int(draw["high"]), shape, generator=gen, device=device,
                             dtype=torch.int64).to(dtype)
    work = torch.float64 if dtype == torch.float64 else torch.float32
    if d == "uniform":
        u = torch.rand(shape, generator=gen, device=device, dtype=work)
        return (float(draw["low"]) + (float(draw["high"]) - float(draw["low"])) * u).to(dtype)
    if d == "normal":
        z = torch.randn(shape, generator=gen, device=device, dtype=work).clamp_(-NORMAL_BOUND, NORMAL_BOUND)
        return (float(draw["mean"]) + float(draw["std"]) * z).to(dtype)
    raise ValueError(f"unknown draw {draw!r}")


def nonfinite_and_max_diff(torch, e, a):
    """(whether the non-finite values of e and a sit at the same places and agree, NaN with NaN; the
    largest |e - a| in double over the elements finite in both) for two floating tensors of one
    shape, chunk by chunk: KernelBench's level 1 tensors hold 1.6 G elements, whose float64 copies
    alone outgrew an 80 GB H100 (issue 29, 2026-12-07)."""
    fe_all, fa_all = e.reshape(-1), a.reshape(-1)
    same, diff = True, 0.0
    for i in range(0, fe_all.numel(), CHUNK):
        x, y = fe_all[i:i + CHUNK], fa_all[i:i + CHUNK]
        agree, fx, fy = finite_masks(torch, x, y)
        same = same and agree
        both = fx & fy
        if bool(both.any()):
            diff = max(diff, float((x[both].double() - y[both].double()).abs().max().item()))
    return same, diff


def compare(torch, eager, art, atol, rtol):
    """(reason or "", per-output details) of the artifact's outputs against eager's."""
    if len(eager) != len(art):
        return "artifact_mismatch", [{"error": f"the artifact returns {len(art)} output(s), the module {len(eager)}"}]
    worst, out = "", []
    for e, a in zip(eager, art):
        d = {"shape": list(e.shape), "dtype": str(e.dtype).replace("torch.", "")}
        if a.shape != e.shape or a.dtype != e.dtype:
            d["artifact"] = [list(a.shape), str(a.dtype).replace("torch.", "")]
            worst = "artifact_mismatch"
        elif not e.is_floating_point():
            d["equal"] = bool(torch.equal(e, a))
            worst = worst or ("" if d["equal"] else "artifact_mismatch")
        else:
            same_nonfinite, diff = nonfinite_and_max_diff(torch, e, a)
            frac = failing_fraction(torch, e, a, atol, rtol)
            d.update(failing_fraction=frac, max_abs_diff=diff, same_nonfinite=same_nonfinite)
            if frac > 0 or not same_nonfinite:
                worst = "artifact_mismatch"
        out.append(d)
    return worst, out


def float32_convolutions(module):
    """Clears allow_tf32 (the last argument) on every aten::_convolution of a loaded TorchScript module and
    returns how many it cleared, as kforge does when it loads one (float32_convolutions in
    data_synth/reference/reference_torchscript.cpp): an artifact traced before the importer traced with
    TF32 off holds True there, which runs its convolutions in TF32 on the GPU whatever torch.backends
    says, and the check would then compare TF32 against eager's float32."""
    cleared = 0
    for m in module.modules():
        for name in m._c._method_names():
            graph = m._c._get_method(name).graph
            for node in graph.findAllNodes("aten::_convolution", True):
                inputs = list(node.inputs())
                last = inputs[-1] if inputs else None
                if last is None or last.node().kind() != "prim::Constant" or last.toIValue() is not True:
                    continue
                with graph.insert_point_guard(node):
                    off = graph.insertConstant(False)
                node.replaceInput(len(inputs) - 1, off)
                cleared += 1
    return cleared


def check(torch, model, draw, spec, task, device, tier):
    """(reason or "", details) of the artifact check of one task (the model already built on the device
    at its own size, `draw` its get_inputs() on the device)."""
    # The importer's own state_swapped (what the artifact was traced with). Imported here: its module
    # imports torch, which the command line defers until its cheap checks have passed.
    tools_dataset = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if tools_dataset not in sys.path:  # tools/dataset: the importer beside
        sys.path.append(tools_dataset)
    from task_import.running import state_swapped
    t0 = time.monotonic()
    d = {"tier": tier or "unknown", "checked": True}
    dev = torch.device(device)
    args = spec["arguments"]
    n_in = sum(1 for x in args if x["role"] == "input")
    entries = [None if torch.is_tensor(x) else x for x in draw()]  # where get_inputs() puts its Python scalars
    slots = [i for i, x in enumerate(entries) if x is None]
    if len(slots) != n_in:
        return "artifact_mismatch", dict(d, error=f"get_inputs() gives {len(slots)} tensor(s), the task states {n_in} input(s)")
    gen = torch.Generator(device=dev).manual_seed((task["seed"] * 2654435761 + 29) % (2**63))
    drawn = [sample(torch, x["draw"], list(x["shape"]), getattr(torch, x["dtype"]), gen, dev) for x in args]
    inputs, state = drawn[:n_in], {x["name"]: t for x, t in zip(args[n_in:], drawn[n_in:])}
    eager_args = list(entries)
    for i, t in zip(slots, inputs):
        eager_args[i] = t.clone()  # the module may write its inputs (and state) in place: copies
    with torch.no_grad(), state_swapped(model, {k: v.clone() for k, v in state.items()}):
        eager = as_outputs(torch, model(*eager_args))
    del eager_args, entries
    try:
        ref = spec["reference"]
        art = torch.jit.load(io.BytesIO(base64.b64decode(ref["artifact"])), map_location=dev)
        float32_convolutions(art)  # as the judge runs it: an older import's TF32 convolutions in float32
        art.train(ref.get("module_mode", "eval") == "train")
        state_args = list(state.values())
        del drawn, state  # the draws themselves go to the artifact, their last use (a third copy at most)
        with torch.jit.optimized_execution(False), torch.inference_mode():
            raw = art(*inputs, *state_args)
        del inputs, state_args
        out = as_outputs(torch, raw)
        del raw, art
    except Exception as e:  # noqa: BLE001 - the artifact's own failure rejects the row
        return "artifact_failed", dict(d, error=error_line(e), seconds=round(time.monotonic() - t0, 3))
    atol, rtol = task["tolerance"]["atol"], task["tolerance"]["rtol"]
    reason, outs = compare(torch, eager, out, atol, rtol)
    return reason, dict(d, outputs=outs, seconds=round(time.monotonic() - t0, 3))
