#!/usr/bin/env python3
"""The shape of the C++ code: per folder, the largest file and the longest function (lizard's
function length, in lines), for the tree at a commit or the working tree.

    tools/bench/code_shape.py [--rev REV] [--json OUT] [--top N]

--rev takes the tree of a commit (git archive into a temporary folder); without it the working tree.
The goals (issue text, ARCHITECTURE.md): at most 600 lines a file, at most 120 lines a function.
"""
import argparse
import datetime
import os
import subprocess
import sys
import tarfile
import tempfile

import lizard

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import results_doc  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FOLDERS = ["env", "anticheat", "rollout", "data_synth", "reward", "configs", "tools/kforge", "tools/bench"]
EXTS = (".cpp", ".h", ".cu")


def sources(base, folder):
    for d, _, files in os.walk(os.path.join(base, folder)):
        if "/corpus" in d.replace(base, ""):  # the exploit corpus: candidate kernels, not the project's code
            continue
        for f in files:
            if f.endswith(EXTS):
                yield os.path.join(d, f)


def shape(base, top):
    out = {}
    for folder in FOLDERS:
        files, funcs = [], []
        for p in sources(base, folder):
            with open(p, encoding="utf-8", errors="replace") as fh:
                n = sum(1 for _ in fh)
            rel = os.path.relpath(p, base)
            files.append((n, rel))
            for fn in lizard.analyze_file(p).function_list:
                funcs.append((fn.length, f"{rel}:{fn.start_line} {fn.name}"))
        files.sort(reverse=True)
        funcs.sort(reverse=True)
        out[folder] = {"files": len(files), "largest_files": files[:top], "longest_functions": funcs[:top]}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rev")
    ap.add_argument("--json")
    ap.add_argument("--top", type=int, default=3)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = ROOT
        if a.rev:
            data = subprocess.run(["git", "-C", ROOT, "archive", a.rev, *[f for f in FOLDERS]], check=False,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout
            if not data:  # a folder that did not exist then: take what there was
                data = subprocess.run(["git", "-C", ROOT, "archive", a.rev], check=True, stdout=subprocess.PIPE).stdout
            p = os.path.join(tmp, "t.tar")
            with open(p, "wb") as fh:
                fh.write(data)
            with tarfile.open(p) as t:
                t.extractall(tmp, filter="data")
            base = tmp
        s = shape(base, a.top)
    rev = a.rev or "working tree"
    print(f"code shape of {rev} (lines; lizard {lizard.version if hasattr(lizard, 'version') else ''})")
    for folder, v in s.items():
        f0 = v["largest_files"][0] if v["largest_files"] else (0, "-")
        g0 = v["longest_functions"][0] if v["longest_functions"] else (0, "-")
        print(f"  {folder:14s} {v['files']:3d} files; largest {f0[0]:5d} {f0[1]}; longest function {g0[0]:4d} {g0[1]}")
    if a.json:
        figures = {}
        for folder, v in s.items():
            key = folder.replace("/", "_")
            figures[f"{key}_largest_file_lines"] = v["largest_files"][0][0] if v["largest_files"] else 0
            figures[f"{key}_longest_function_lines"] = v["longest_functions"][0][0] if v["longest_functions"] else 0
        doc = {"gpu": "none (source analysis)", "driver": "", "cuda": "", "torch": "",
               "date": datetime.date.today().isoformat(), "commit": a.rev or results_doc.commit(),
               "command": "tools/bench/code_shape.py" + (f" --rev {a.rev}" if a.rev else ""), "figures": figures,
               "details": s}
        results_doc.write(a.json, doc, "code_shape")
    return 0


if __name__ == "__main__":
    sys.exit(main())
