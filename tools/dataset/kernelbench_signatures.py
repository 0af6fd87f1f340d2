#!/usr/bin/env python3
"""Derives decontamination signatures from a KernelBench checkout: for every problem of levels 1-3,
the operators its forward() applies (mapped to kforge operator names, in order) and the shapes of
its get_inputs() tensors. Only this derived list is committed (datasets/kernelbench_signatures.json),
never KernelBench's files.

    tools/dataset/kernelbench_signatures.py --repo PATH [--git-dir] --out datasets/kernelbench_signatures.json

PATH is a checkout (or, with --git-dir, a bare git directory read with `git show HEAD:...`).
"""
import argparse
import ast
import json
import os
import re
import subprocess
import sys

# PyTorch names (modules, functions, methods, operators) -> kforge operator names.
OPS = {
    "Linear": "linear", "linear": "linear", "Conv1d": "conv1d", "Conv2d": "conv2d", "Conv3d": "conv3d",
    "conv1d": "conv1d", "conv2d": "conv2d", "conv3d": "conv3d",
    "ConvTranspose1d": "conv_transpose1d", "ConvTranspose2d": "conv_transpose2d", "ConvTranspose3d": "conv_transpose3d",
    "conv_transpose1d": "conv_transpose1d", "conv_transpose2d": "conv_transpose2d", "conv_transpose3d": "conv_transpose3d",
    "ReLU": "relu", "relu": "relu", "relu_": "relu", "GELU": "gelu", "gelu": "gelu", "SiLU": "silu", "silu": "silu",
    "Sigmoid": "sigmoid", "sigmoid": "sigmoid", "Tanh": "tanh", "tanh": "tanh", "Mish": "mish", "mish": "mish",
    "Hardswish": "hardswish", "hardswish": "hardswish", "Hardsigmoid": "hardsigmoid", "hardsigmoid": "hardsigmoid",
    "Softplus": "softplus", "softplus": "softplus", "ELU": "elu", "elu": "elu", "SELU": "selu", "selu": "selu",
    "LeakyReLU": "leaky_relu", "leaky_relu": "leaky_relu", "Softsign": "softsign", "softsign": "softsign",
    "Hardtanh": "hardtanh", "hardtanh": "hardtanh", "clamp": "clamp", "clip": "clamp", "clamp_": "clamp",
    "exp": "exp", "abs": "abs", "sin": "sin", "square": "square",
    "sum": "sum", "mean": "mean", "max": "amax", "amax": "amax", "min": "amin", "amin": "amin", "argmax": "argmax",
    "prod": "prod", "norm": "vector_norm", "vector_norm": "vector_norm", "logsumexp": "logsumexp", "cumsum": "cumsum",
    "cumprod": "cumprod", "var": "var", "Softmax": "softmax", "softmax": "softmax", "LogSoftmax": "log_softmax",
    "log_softmax": "log_softmax", "LayerNorm": "layer_norm", "layer_norm": "layer_norm", "RMSNorm": "rms_norm",
    "rms_norm": "rms_norm", "GroupNorm": "group_norm", "group_norm": "group_norm", "BatchNorm1d": "batch_norm",
    "BatchNorm2d": "batch_norm", "BatchNorm3d": "batch_norm", "batch_norm": "batch_norm",
    "InstanceNorm1d": "instance_norm", "InstanceNorm2d": "instance_norm", "InstanceNorm3d": "instance_norm",
    "instance_norm": "instance_norm", "normalize": "l2_normalize", "matmul": "matmul", "mm": "matmul", "bmm": "bmm",
    "einsum": "einsum", "MaxPool1d": "max_pool1d", "max_pool1d": "max_pool1d", "MaxPool2d": "max_pool2d",
    "max_pool2d": "max_pool2d", "AvgPool2d": "avg_pool2d", "avg_pool2d": "avg_pool2d",
    "AdaptiveAvgPool2d": "adaptive_avg_pool2d", "adaptive_avg_pool2d": "adaptive_avg_pool2d",
    "Upsample": "upsample2d", "interpolate": "upsample2d", "Dropout": "dropout", "dropout": "dropout",
    "transpose": "transpose", "permute": "permute", "view": "reshape", "reshape": "reshape", "flatten": "flatten",
    "Flatten": "flatten", "cat": "concat", "unsqueeze": "unsqueeze", "Embedding": "embedding", "embedding": "embedding",
    "scaled_dot_product_attention": "sdpa", "cross_entropy": "cross_entropy", "CrossEntropyLoss": "cross_entropy",
    "mse_loss": "mse_loss", "MSELoss": "mse_loss", "kl_div": "kl_div", "KLDivLoss": "kl_div",
    "smooth_l1_loss": "smooth_l1_loss", "SmoothL1Loss": "smooth_l1_loss", "where": "where", "gt": "gt",
    "maximum": "maximum", "minimum": "minimum", "add": "add", "sub": "sub", "mul": "mul", "div": "div",
}
BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div"}
# Calls that are bookkeeping, not operators.
IGNORED = {"size", "contiguous", "to", "float", "half", "item", "dim", "shape", "numel", "super", "len", "range", "int",
           "type_as", "expand_as", "clone", "detach", "cuda", "cpu", "tuple", "list", "print", "isinstance", "zeros_like"}


def constants(tree):
    env = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            try:
                value = eval(compile(ast.Expression(node.value), "<c>", "eval"), {"__builtins__": {}}, dict(env))
            except Exception:
                continue
            target = node.targets[0]
            if isinstance(target, ast.Name):
                env[target.id] = value
            elif isinstance(target, ast.Tuple) and isinstance(value, tuple) and len(value) == len(target.elts):
                for t, v in zip(target.elts, value):  # depth, height, width = 24, 48, 48
                    if isinstance(t, ast.Name):
                        env[t.id] = v
    return env


def input_shapes(tree, env):
    shapes = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "get_inputs":
            for call in ast.walk(node):
                if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr in (
                        "rand", "randn", "randint", "ones", "zeros", "empty", "rand_like"):
                    args = call.args[2:] if call.func.attr == "randint" else call.args
                    dims = []
                    for a in args:
                        try:
                            v = eval(compile(ast.Expression(a), "<s>", "eval"), {"__builtins__": {}}, dict(env))
                        except Exception:
                            dims = None
                            break
                        if isinstance(v, (tuple, list)):
                            dims.extend(int(x) for x in v)
                        elif isinstance(v, int):
                            dims.append(v)
                    if dims:
                        shapes.append(dims)
    return shapes


def call_name(func):
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return None


def module_kinds(tree):
    """self.NAME = nn.Class(...) in __init__ -> {NAME: Class}."""
    kinds = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            for t in node.targets:
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                    kinds[t.attr] = call_name(node.value.func)
    return kinds


def forward_ops(tree):
    kinds = module_kinds(tree)
    ops = []

    def visit(node):
        # Children first: the inner call runs before the outer one.
        for child in ast.iter_child_nodes(node):
            visit(child)
        if isinstance(node, ast.BinOp) and type(node.op) in BINOPS:
            ops.append(BINOPS[type(node.op)])
        elif isinstance(node, ast.Call):
            f = node.func
            name = None
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "self":
                name = kinds.get(f.attr) or f.attr
            else:
                name = call_name(f)
            if name and name not in IGNORED:
                ops.append(OPS.get(name, "other:" + name))

    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "forward":
                    for stmt in item.body:
                        visit(stmt)
    return ops


def signature(text, name, level):
    tree = ast.parse(text)
    env = constants(tree)
    return {"name": name, "level": level, "ops": forward_ops(tree), "input_shapes": input_shapes(tree, env)}


def list_files(repo, git_dir):
    if git_dir:
        out = subprocess.run(["git", "--git-dir", repo, "ls-tree", "-r", "--name-only", "HEAD"], capture_output=True,
                             text=True, check=True).stdout.split()
    else:
        out = []
        for root, _, files in os.walk(repo):
            out += [os.path.relpath(os.path.join(root, f), repo) for f in files]
    return sorted(p for p in out if re.match(r"KernelBench/level[123]/[^/]+\.py$", p))


def read(repo, git_dir, path):
    if git_dir:
        return subprocess.run(["git", "--git-dir", repo, "show", "HEAD:" + path], capture_output=True, text=True,
                              check=True).stdout
    with open(os.path.join(repo, path)) as f:
        return f.read()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo", required=True, help="KernelBench checkout, or bare git dir with --git-dir")
    ap.add_argument("--git-dir", action="store_true", help="--repo is a bare git directory")
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    problems, failed = [], []
    for path in list_files(a.repo, a.git_dir):
        level = int(path.split("/")[1][len("level"):])
        name = "/".join(path.split("/")[1:])
        try:
            problems.append(signature(read(a.repo, a.git_dir, path), name, level))
        except SyntaxError as e:
            failed.append(f"{name}: {e}")
    commit = ""
    if a.git_dir:
        commit = subprocess.run(["git", "--git-dir", a.repo, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    # derived_by names the tool as the committed list does (its path before tools/dataset/).
    doc = {"derived_from": "ScalingIntelligence/KernelBench" + ("@" + commit if commit else ""),
           "derived_by": "tools/kernelbench_signatures.py", "problems": problems}
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=0)
        f.write("\n")
    print(f"{len(problems)} problems -> {a.out}" + (f"; {len(failed)} unparsable: {failed}" if failed else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
