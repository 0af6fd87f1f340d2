#!/usr/bin/env python3
"""The shape of the C++ code at a commit or in the working tree: files, functions, the files and
functions over the goals, the largest file and the longest function, per folder and in total; the
untyped JSON reads of the judging code; and the `duplicates` pairs of the whole tree (issue 27).

    tools/bench/code_shape.py [--rev REV] [--json OUT] [--top N] [--no-duplicates]
    tools/bench/code_shape.py --compare BEFORE.json AFTER.json     # a markdown table of two records

--rev takes the tree of a commit (git archive of the whole tree into a temporary folder); without it
the working tree (the files git tracks and the untracked ones it does not ignore).

What counts as C++: files ending .cpp, .h or .cu, except
  - anything below a folder named `corpus` (the anti-cheat exploit corpus: candidate kernels),
  - anything below a folder named `seeds` inside a `fuzz` folder (fuzzer inputs),
  - anything below a folder named `compile_sources` (kernels a benchmark compiles, not the project's code),
  - the top-level `datasets/` (sample tasks and their candidate kernels) and hidden top-level folders.
Folders are discovered, not listed: one row per top-level folder holding C++ files, and one row per
subfolder one level below each of SPLIT (env/, tools/) instead of its own row. tests/ counts: it is
code the project keeps, and `duplicates` reads it too; it has its own row, the `all_*` figures include
it and the `code_*` figures leave it out.

Lines are physical lines of a file; a function's length is lizard's (first to last line). The goals
(issue text, ARCHITECTURE.md): at most 600 lines a file, at most 120 lines a function; a file or
function over them is one with more.

Untyped JSON reads, in the files named JUDGE_FILES wherever they live outside tests/ (they build and
read the evaluation report): textual counts in the file with its comments blanked out and what its
string literals say hidden (their quotes kept), of
  - `.contains(`                     (any argument),
  - `.value(`                        (any argument but none: `.value()` is std::optional's),
  - `.at("`                          (a string-literal key),
  - `["key"]`                        (a string-literal subscript) unless it is written to: followed,
                                     after any further `[...]`, by `=` (not `==`), `.push_back(` or
                                     `.emplace_back(`.
The count does not know types: a `.contains(` on a std::set counts too. At 161e5e9 `.contains(` plus
`.value(` give 70, 54 and 29 in evaluator.cpp, report_text.cpp and episode.cpp, the issue's numbers.

`duplicates` (on PATH) runs as `duplicates --repo TREE --most 200 --seconds 300`; the record keeps
the pairs its first line counts (`N pairs of places (M files read), ...`) and any `incomplete:` lines.
It reads every language in the tree, not only the C++ counted above.
"""
import argparse
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile

import lizard

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import results_doc  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXTS = (".cpp", ".h", ".cu")
SPLIT = ("env", "tools")  # top-level folders broken down one level below
SKIP_TOP = ("datasets",)  # top-level folders that hold data, not the project's code
SKIP_DIRS = ("corpus", "compile_sources")  # folders, anywhere, whose files are inputs, not code
TESTS = "tests"
JUDGE_FILES = ("evaluator.cpp", "report_text.cpp", "episode.cpp")
FILE_GOAL, FUNCTION_GOAL = 600, 120
DUPLICATES = ["duplicates", "--most", "200", "--seconds", "300"]


def is_source(rel):
    """Whether the tree-relative path `rel` (with /) is C++ the shape counts (see the docstring)."""
    parts = rel.split("/")
    if not rel.endswith(EXTS) or len(parts) < 2:
        return False
    if parts[0].startswith(".") or parts[0] in SKIP_TOP:
        return False
    dirs = parts[:-1]
    if any(d in SKIP_DIRS for d in dirs):
        return False
    if "fuzz" in dirs and "seeds" in dirs[dirs.index("fuzz"):]:
        return False
    return True


def folder_of(rel):
    """The row a source file counts in: its top-level folder, or top/sub for the folders of SPLIT
    (top/(top) for a file right in one of them)."""
    parts = rel.split("/")
    if parts[0] in SPLIT:
        return f"{parts[0]}/{parts[1]}" if len(parts) > 2 else f"{parts[0]}/(top)"
    return parts[0]


def tree_files(base, git):
    """The files of the tree at `base`, relative, with /: what git tracks and the untracked files it
    does not ignore when `git` (the working tree), else every file below `base` (an archive)."""
    if git:
        out = subprocess.run(["git", "-C", base, "ls-files", "-co", "--exclude-standard", "-z"], check=True,
                             stdout=subprocess.PIPE).stdout.decode()
        return sorted({p for p in out.split("\0") if p and os.path.isfile(os.path.join(base, p))})
    rels = []
    for d, _, files in os.walk(base):
        for f in files:
            rels.append(os.path.relpath(os.path.join(d, f), base).replace(os.sep, "/"))
    return sorted(rels)


_TOKENS = re.compile(r'R"([^(\s]{0,16})\((?:.|\n)*?\)\1"'  # raw string literal
                     r'|"(?:\\.|[^"\\\n])*"'  # string literal
                     r"|'(?:\\.|[^'\\\n])*'"  # character literal
                     r"|//[^\n]*"  # line comment
                     r"|/\*(?:.|\n)*?\*/")  # block comment


def strip_comments(text):
    """`text` with its C++ comments blanked out and the insides of its string and character literals
    turned to `s` (newlines kept), so that only code matches; a literal keeps its quotes, a raw one
    becomes a plain one."""
    def blank(m):
        s = m.group(0)
        if s.startswith(("//", "/*")):
            return re.sub(r"[^\n]", " ", s)
        if s.startswith("R"):
            return '"' + re.sub(r"[^\n]", "s", s[3 + len(m.group(1)):-2 - len(m.group(1))]) + '"'
        return s[0] + "s" * (len(s) - 2) + s[-1]
    return _TOKENS.sub(blank, text)


_READS = {
    "contains": re.compile(r"\.contains\("),
    "value": re.compile(r"\.value\((?!\s*\))"),
    "at": re.compile(r'\.at\(\s*"'),
    "subscript": re.compile(r'\[\s*"(?:\\.|[^"\\\n])*"\s*\]'),
}
_WRITTEN = re.compile(r'(?:\s*\[[^\]\n]*\])*\s*(?:=(?!=)|\.push_back\(|\.emplace_back\()')


def json_reads(text):
    """The untyped JSON reads in C++ source `text`, per kind (the rule is in the docstring)."""
    code = strip_comments(text)
    out = {}
    for kind, rx in _READS.items():
        n = 0
        for m in rx.finditer(code):
            if kind == "subscript" and _WRITTEN.match(code, m.end()):
                continue
            n += 1
        out[kind] = n
    return out


def line_count(path):
    with open(path, "rb") as fh:
        return sum(1 for _ in fh)


def measure(base, rels, top):
    """Per folder and in total: files, functions, the files and functions over the goals, the `top`
    largest files and longest functions."""
    groups = {}
    for rel in rels:
        if not is_source(rel):
            continue
        p = os.path.join(base, rel)
        n = line_count(p)
        funcs = [(fn.length, f"{rel}:{fn.start_line} {fn.name}") for fn in lizard.analyze_file(p).function_list]
        for key in (folder_of(rel), "all") + (() if rel.split("/")[0] == TESTS else ("code",)):
            g = groups.setdefault(key, {"files": [], "functions": []})
            g["files"].append((n, rel))
            g["functions"].extend(funcs)
    out = {}
    for key in sorted(groups, key=lambda k: (k in ("all", "code"), k)):
        files = sorted(groups[key]["files"], key=lambda t: (-t[0], t[1]))
        funcs = sorted(groups[key]["functions"], key=lambda t: (-t[0], t[1]))
        out[key] = {"files": len(files), "functions": len(funcs),
                    "files_over_600_lines": sum(1 for n, _ in files if n > FILE_GOAL),
                    "functions_over_120_lines": sum(1 for n, _ in funcs if n > FUNCTION_GOAL),
                    "largest_files": files[:top], "longest_functions": funcs[:top]}
    return out


def judge_reads(base, rels):
    """The untyped JSON reads of each file of JUDGE_FILES, found by name outside tests/: per file
    name, the paths found, the count per kind and the total."""
    out = {}
    for name in JUDGE_FILES:
        paths = [r for r in rels if r.rsplit("/", 1)[-1] == name and is_source(r) and r.split("/")[0] != TESTS]
        kinds = {k: 0 for k in _READS}
        for r in paths:
            with open(os.path.join(base, r), encoding="utf-8", errors="replace") as fh:
                for k, v in json_reads(fh.read()).items():
                    kinds[k] += v
        out[name] = {"paths": paths, "reads": kinds, "total": sum(kinds.values())}
    return out


_DUP_FIRST = re.compile(r"^(\d+) pairs? of places \((\d+) files? read\)(.*)$")
_DUP_NONE = re.compile(r"^no duplicates \((\d+) files? read\)")


def parse_duplicates(text):
    """What the `duplicates` output `text` says: pairs, files read, pairs by shape alone and
    boilerplate ones (from its first line), and its `incomplete:` lines. None when the first line
    is neither a count nor `no duplicates`."""
    lines = text.splitlines()
    first = lines[0] if lines else ""
    incomplete = [ln for ln in lines if ln.startswith("incomplete:")]
    m = _DUP_FIRST.match(first)
    if m:
        shape = re.search(r"\((\d+) by shape alone", m.group(3))
        boiler = re.search(r"(\d+) of those marked boilerplate", m.group(3))
        return {"pairs": int(m.group(1)), "files_read": int(m.group(2)),
                "shape_pairs": int(shape.group(1)) if shape else 0,
                "boilerplate_pairs": int(boiler.group(1)) if boiler else 0,
                "first_line": first, "incomplete": incomplete}
    m = _DUP_NONE.match(first)
    if m:
        return {"pairs": 0, "files_read": int(m.group(1)), "shape_pairs": 0, "boilerplate_pairs": 0,
                "first_line": first, "incomplete": incomplete}
    return None


def run_duplicates(base):
    if not shutil.which(DUPLICATES[0]):
        return {"error": "no `duplicates` on PATH"}
    r = subprocess.run(DUPLICATES + ["--repo", base], cwd=base, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=900)
    parsed = parse_duplicates(r.stdout)
    return parsed if parsed else {"error": "unexpected first line", "first_line": r.stdout[:300]}


def figure_key(folder):
    key = re.sub(r"[^a-z0-9]+", "_", folder.replace("(top)", "top").lower()).strip("_")
    return key if re.match(r"[a-z]", key) else "d_" + key


def figures_of(shape, judge, dups):
    figures = {}
    for folder, v in shape.items():
        key = figure_key(folder)
        for name in ("files", "functions", "files_over_600_lines", "functions_over_120_lines"):
            figures[f"{key}_{name}"] = v[name]
        figures[f"{key}_largest_file_lines"] = v["largest_files"][0][0] if v["largest_files"] else 0
        figures[f"{key}_longest_function_lines"] = v["longest_functions"][0][0] if v["longest_functions"] else 0
    kinds = {k: 0 for k in _READS}
    for name, v in judge.items():
        if not v["paths"]:
            continue  # not in this tree: no figure rather than a 0 that reads as none
        figures[f"judge_json_reads_{figure_key(name.rsplit('.', 1)[0])}"] = v["total"]
        for k, n in v["reads"].items():
            kinds[k] += n
    for k, n in kinds.items():
        figures[f"judge_json_reads_{k}"] = n
    figures["judge_json_reads_total"] = sum(kinds.values())
    if "pairs" in dups:
        for name in ("pairs", "files_read", "shape_pairs", "boilerplate_pairs"):
            figures[f"duplicates_{name}"] = dups[name]
        figures["duplicates_incomplete"] = 1 if dups["incomplete"] else 0
    return figures


def extract(rev, tmp):
    """The whole tree of commit `rev` under `tmp`."""
    data = subprocess.run(["git", "-C", ROOT, "archive", rev], check=True, stdout=subprocess.PIPE).stdout
    p = os.path.join(tmp, "tree.tar")
    with open(p, "wb") as fh:
        fh.write(data)
    base = os.path.join(tmp, "tree")
    with tarfile.open(p) as t:
        t.extractall(base, filter="data")
    os.remove(p)
    return base


def print_shape(label, shape, judge, dups):
    print(f"code shape of {label} (lines; lizard {getattr(lizard, 'version', '')})")
    for folder, v in shape.items():
        f0 = v["largest_files"][0] if v["largest_files"] else (0, "-")
        g0 = v["longest_functions"][0] if v["longest_functions"] else (0, "-")
        print(f"  {folder:22s} {v['files']:4d} files {v['functions']:5d} functions; over goals "
              f"{v['files_over_600_lines']:2d} files {v['functions_over_120_lines']:3d} functions; "
              f"largest {f0[0]:5d} {f0[1]}; longest function {g0[0]:4d} {g0[1]}")
    for name, v in judge.items():
        where = ", ".join(v["paths"]) or "not found"
        print(f"  untyped JSON reads {name:16s} {v['total']:4d} {v['reads']} ({where})")
    if "pairs" in dups:
        print(f"  duplicates: {dups['first_line']}")
        for ln in dups["incomplete"]:
            print(f"  duplicates: {ln}")
    else:
        print(f"  duplicates: {dups}")


def _cell(doc, key, name_of=None):
    v = doc["figures"].get(key)
    if v is None:
        return "-"
    if name_of:
        n = name_of(doc)
        return f"{v} ({n})" if n else str(v)
    return str(v)


def _largest(group, what):
    def name_of(doc):
        rows = doc.get("details", {}).get("folders", {}).get(group, {}).get(what) or []
        return rows[0][1] if rows else ""
    return name_of


def compare(before, after):
    """A markdown table (metric, before, after) of two records this tool wrote."""
    rows = []
    for group, label in (("all", "C++ incl. tests/"), ("code", "C++ without tests/")):
        rows += [(f"{label}: files", f"{group}_files", None),
                 (f"{label}: functions", f"{group}_functions", None),
                 (f"{label}: files over {FILE_GOAL} lines", f"{group}_files_over_600_lines", None),
                 (f"{label}: functions over {FUNCTION_GOAL} lines", f"{group}_functions_over_120_lines", None)]
    rows += [("largest file (lines)", "code_largest_file_lines", _largest("code", "largest_files")),
             ("longest function (lines)", "code_longest_function_lines", _largest("code", "longest_functions")),
             ("`duplicates` pairs (whole tree)", "duplicates_pairs", None)]
    for name in JUDGE_FILES:
        stem = name.rsplit(".", 1)[0]
        rows.append((f"untyped JSON reads: {name}", f"judge_json_reads_{figure_key(stem)}", None))
    rows += [("untyped JSON reads: total", "judge_json_reads_total", None),
             ("… of which `.contains(` / `.value(`", None, None)]
    out = [f"| metric | before ({before['commit']}) | after ({after['commit']}) |", "| --- | --- | --- |"]
    for label, key, name_of in rows:
        if key is None:
            cells = [str(d["figures"].get("judge_json_reads_contains", 0)
                         + d["figures"].get("judge_json_reads_value", 0)) for d in (before, after)]
        else:
            cells = [_cell(d, key, name_of) for d in (before, after)]
        out.append(f"| {label} | {cells[0]} | {cells[1]} |")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rev", help="a commit (default: the working tree)")
    ap.add_argument("--json", help="write a results record here")
    ap.add_argument("--top", type=int, default=3, help="largest files and longest functions kept per folder")
    ap.add_argument("--no-duplicates", action="store_true", help="skip the `duplicates` run")
    ap.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"), help="print a markdown table of two records")
    a = ap.parse_args()
    if a.compare:
        docs = []
        for p in a.compare:
            with open(p) as fh:
                docs.append(json.load(fh))
        print(compare(*docs))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        base = extract(a.rev, tmp) if a.rev else ROOT
        rels = tree_files(base, git=not a.rev)
        shape = measure(base, rels, a.top)
        judge = judge_reads(base, rels)
        dups = {"skipped": True} if a.no_duplicates else run_duplicates(base)
    commit = (subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", a.rev], check=True, stdout=subprocess.PIPE,
                             text=True).stdout.strip() if a.rev else results_doc.commit())
    print_shape(a.rev or "the working tree", shape, judge, dups)
    if a.json:
        doc = {"gpu": "none (source analysis)", "driver": "", "cuda": "", "torch": "",
               "date": datetime.date.today().isoformat(), "commit": commit,
               "command": "tools/bench/code_shape.py" + (f" --rev {a.rev}" if a.rev else "")
               + (" --no-duplicates" if a.no_duplicates else ""),
               "figures": figures_of(shape, judge, dups),
               "details": {"tree": f"commit {a.rev}" if a.rev else "working tree",
                           "lizard": getattr(lizard, "version", ""),
                           "counted": f"{'/'.join(EXTS)} outside {', '.join(SKIP_TOP)}/, hidden top-level folders, "
                                      f"folders named {', '.join(SKIP_DIRS)} and fuzz seeds; tests/ counted "
                                      "(all_* with it, code_* without)",
                           "folders": shape, "judge_json_reads": judge, "duplicates": dups}}
        results_doc.write(a.json, doc, "code_shape")
    return 0


if __name__ == "__main__":
    sys.exit(main())
