"""The task file (data_synth/task/TASK_FORMAT.md, "Imported tasks"): a kforge task YAML without
dims/check_dims/graph, with `program` (the source exactly as read) and `reference` (the artifact)."""
import hashlib
import os
import re

import yaml

from . import artifact

GENERATOR = "kforge tasks import"
# `source` of the task per --format: the names kforge's task parser knows (data_synth/task/task_spec.cpp,
# TASK_FORMAT.md "Source and split"). The contract's text spells the second `cuda_agent_ops`, the C++
# enumerator's name; the parser reads `cuda-agent-ops`.
SOURCES = {"kernelbench": "kernelbench", "cuda-agent": "cuda-agent-ops"}
# The tolerance profiles, as configs/eval.yaml's precision.profiles give them (the file kforge reads,
# data_synth/reference/tolerance.h's rule applies them): `kforge` is its `default` profile,
# `cuda-agent` CUDA Agent's published 1e-2 everywhere.
PROFILE_IN_EVAL_CONFIG = {"kforge": "default", "cuda-agent": "cuda-agent"}


def eval_config_path():
    root = os.environ.get("KFORGE_SOURCE_DIR") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")
    return os.path.join(root, "configs", "eval.yaml")


def _load_tolerances():
    with open(eval_config_path()) as f:
        profiles = yaml.safe_load(f)["precision"]["profiles"]
    return {name: {dtype: {"atol": float(t["atol"]), "rtol": float(t["rtol"])} for dtype, t in profiles[key].items()}
            for name, key in PROFILE_IN_EVAL_CONFIG.items()}


TOLERANCES = _load_tolerances()


class Flow(dict):
    pass


class Literal(str):
    pass


class Dumper(yaml.SafeDumper):
    pass


Dumper.add_representer(Flow, lambda d, v: d.represent_mapping("tag:yaml.org,2002:map", v.items(), flow_style=True))
Dumper.add_representer(Literal, lambda d, v: d.represent_scalar("tag:yaml.org,2002:str", str(v), style="|"))
Dumper.add_representer(list, lambda d, v: d.represent_sequence("tag:yaml.org,2002:seq", v, flow_style=True))


class Block(list):
    pass


Dumper.add_representer(Block, lambda d, v: d.represent_sequence("tag:yaml.org,2002:seq", v, flow_style=False))


def task_id(fmt, item):
    if fmt == "kernelbench":
        stem = re.sub(r"[^a-z0-9]", "_", item.stem.lower())
        return f"kb_l{item.level if item.level is not None else 'null'}_{stem}"
    return f"ca_{item.row}_{hashlib.sha256(item.source.encode('utf-8')).hexdigest()[:8]}"


def task_seed(base_seed, tid):
    return int(hashlib.sha256(f"{base_seed}:{tid}".encode()).hexdigest()[:8], 16)


def description(fmt, item, analysis):
    if fmt == "cuda-agent":
        text = f"CUDA-Agent-Ops row {item.row}"
        if item.data_source:
            text += f" ({item.data_source})"
        return text + (": " + ", ".join(item.ops) if item.ops else "")
    return analysis.description or f"KernelBench level {item.level if item.level is not None else '?'}: {item.stem}"


def task_document(tid, fmt, item, analysis, opts):
    """The task as a dict, in the order the file lists its keys."""
    sha, b64 = artifact.encode(analysis.artifact)
    cost = Flow()
    if analysis.flops is not None:
        cost["flops"] = analysis.flops
    cost["min_bytes"] = analysis.min_bytes
    arguments = Block(Flow(name=a["name"], role=a["role"], shape=a["shape"], dtype=a["dtype"], draw=Flow(a["draw"]))
                      for a in analysis.arguments)
    doc = {
        "kforge_task": 1,
        "id": tid,
        "source": SOURCES[fmt],
        "split": opts["split"],
        "description": description(fmt, item, analysis),
        "seed": task_seed(opts["seed"], tid),
        "dtype": analysis.dtype,
        "arguments": arguments,
        "outputs": Block(Flow(o) for o in analysis.outputs),
        "tolerance": Flow(TOLERANCES[opts["tolerance"]][analysis.dtype]),
        "cost": cost,
        "provenance": Flow(generator=GENERATOR, format=fmt, file=item.file, file_sha256=item.file_sha256, row=item.row,
                           level=item.level, ops=item.ops, tolerance_profile=opts["tolerance"]),
        "program": Literal(item.source),
        "reference": {"kind": "torchscript", "module_mode": analysis.module_mode, "sha256": sha, "artifact": b64},
    }
    if analysis.extra_shapes:
        doc["extra_shapes"] = Block(Flow(kind=x["kind"], constants=Flow(x["constants"]), inputs=x["inputs"], outputs=x["outputs"])
                                    for x in analysis.extra_shapes)
    if analysis.init_inputs:
        doc["init_inputs"] = list(analysis.init_inputs)
    return doc


def dump(doc):
    """The YAML text; checked to read back to the same program text."""
    text = yaml.dump(doc, Dumper=Dumper, sort_keys=False, allow_unicode=True, width=1 << 30, default_flow_style=False)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    back = yaml.load(text, Loader=loader)
    assert back["program"] == str(doc["program"]) and back["reference"]["artifact"] == doc["reference"]["artifact"]
    return text
