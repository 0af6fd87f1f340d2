#!/usr/bin/env python3
"""Writes the README of a shipped dataset folder (datasets/synth/README.md) from its summary.json:
what the folder holds, how to read it, the baselines' method and machine, and the counts (the CPU
stage's funnel, the GPU stage's rejections, the extra shapes, the kept tasks per operator count,
split, dtype and family, eager runtime and torch.compile speedup). `tools/dataset/synth_dataset.sh finish` runs it, so the
figures are always the shipped files' own.

    tools/dataset/synth_readme.py SUMMARY_JSON OUT_MD [--files DIR] [--commit SHA]
"""
import argparse
import datetime
import json
import os
import sys


def table(head, rows):
    out = ["| " + " | ".join(head) + " |", "| " + " | ".join("---" for _ in head) + " |"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out) + "\n"


def share(c, n):
    return f"{100.0 * c / n:.1f} %" if n else "-"


def counts(title, d, n):
    return f"**{title}**\n\n" + table(["", "tasks", "share"], [(k, v, share(v, n)) for k, v in d.items()]) + "\n"


def size(path):
    b = os.path.getsize(path)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if b < 1024 or unit == "GiB":
            return f"{b:.0f} {unit}" if unit == "B" else f"{b:.1f} {unit}"
        b /= 1024.0


FILES = [
    ("dataset.h5.xz", "every task synthesised (kept and rejected), xz-compressed HDF5: specs, programs, baselines, "
                      "status (`data_synth/dataset/DATASET_FORMAT.md`)"),
    ("tasks.jsonl.xz", "the kept tasks (status `ok`), one JSON object per line with every column"),
    ("input_checks.jsonl.xz", "the input checks' per-task figures (`kforge tasks sensitivity`, one JSON object per "
                              "task) that `tools/dataset/synth_dataset.sh refilter` decided the rows on"),
    ("summary.txt", "the summary as a table (both stages)"),
    ("summary.json", "the same, as JSON (`gpu` is the GPU stage's part)"),
    ("rejections.png", "candidates rejected per CPU filter"),
    ("gpu_rejections.png", "rows rejected per GPU filter"),
    ("ops_per_task.png", "operators per kept task"),
    ("est_runtime.png", "estimated eager runtime of the CPU stage's candidates"),
    ("eager_runtime.png", "measured eager runtime of the kept tasks"),
    ("compile_speedup.png", "torch.compile speedup over eager of the kept tasks"),
]


def time_section(calls, s):
    """How long the dataset took to build, from tools/dataset/synth_calls_report.py's figures."""
    f = calls["figures"]
    out = ["## How long it took\n"]
    cpu_s = s.get("seconds")
    rows = [("GPU stage: device calls", f["calls_count"]),
            ("GPU stage: the calls' time (each as long as its slowest process)", f"{f['calls_wall_s'] / 60:.1f} min"),
            ("GPUs per call (one process each)", f["gpus_per_call_max_count"]),
            ("GPU-hours", f"{f['gpu_held_s'] / 3600:.2f}"),
            ("rows measured per minute, host / per GPU-hour", f"{f['rows_per_min_host']:.1f} / {f['rows_per_gpu_hour']:.0f}")]
    if isinstance(cpu_s, (int, float)):
        rows.insert(0, ("CPU stage (`kforge synth`, its last run)", f"{cpu_s:.0f} s"))
    out.append(table(["figure", "value"], rows))
    ph = [(k[len("phase_"):-len("_pct")], v) for k, v in f.items() if k.startswith("phase_") and k.endswith("_pct")]
    if ph:
        out.append("Where the timing processes' time went: "
                   + ", ".join(f"{name} {v:.1f} %" for name, v in sorted(ph, key=lambda kv: -kv[1])) + ".\n")
    return "\n".join(out)


def render(s, files_dir=None, commit="", calls=None):
    g = s.get("gpu") or {}
    # The input checks (tools/dataset/synth_refilter.py), after the GPU stage: the kept tasks are theirs.
    ic = s.get("input_checks") or {}
    kept = ic["kept"] if ic else g.get("kept", 0)
    final = ic or g
    pending = g.get("pending", s.get("kept", 0))
    done = bool(g) and pending == 0
    out = ["# The synthesised kforge dataset\n"]
    if done:
        out.append(f"**{kept} tasks** with eager and torch.compile baselines measured on an {g.get('gpu') or '?'}, "
                   f"out of {g['measured']} candidates that passed the CPU stage ({s['drawn']} drawn). "
                   "Written by `tools/dataset/synth_dataset.sh finish`" + (" and `refilter`" if ic else "")
                   + " (`tools/dataset/synth_readme.py`); do not edit by hand.\n")
    else:
        out.append(f"**Partial:** the GPU stage has measured {g.get('measured', 0)} of {g.get('tasks', s.get('kept', 0))} "
                   f"candidates ({pending} pending); {kept} are kept so far. Written by `tools/dataset/synth_readme.py`.\n")
    out.append("Each task is a composition of 1 to 5 PyTorch operators whose eager runtime on the GPU lies in "
               f"{fmt_window(g.get('window_ms'))}; deterministic, not near-constant, varying with its inputs, "
               + ("every input mattering (each argument, a row and a channel of it replaced by its mean moves the "
                  "answer beyond tolerance; `kforge tasks sensitivity`), " if ic else "")
               + "not a structural duplicate of another task and not similar to KernelBench's levels 1-3. Its spec, its "
               "PyTorch program and its baselines are in the dataset. How the tasks were made: "
               "`data_synth/dataset/DATASET_FORMAT.md` (\"Stages\") and `tools/dataset/SYNTH_GPU.md`.\n")

    out.append("## Files\n")
    rows = []
    for name, what in FILES:
        p = os.path.join(files_dir, name) if files_dir else None
        if p is None or os.path.exists(p):
            rows.append((f"`{name}`", size(p) if p else "", what))
    out.append(table(["file", "size", "what"], rows))

    out.append("## Reading it\n")
    out.append("```bash\n"
               "kforge tasks count datasets/synth/dataset.h5.xz --status ok              # the kept tasks\n"
               "kforge tasks count datasets/synth/dataset.h5.xz --status all             # every row, the rejected ones too\n"
               "kforge tasks list datasets/synth/dataset.h5.xz --status ok --split heldout\n"
               "kforge tasks export datasets/synth/dataset.h5.xz --status ok --format kernelbench --out DIR  # one ID.py per task\n"
               "unxz -k datasets/synth/dataset.h5.xz                                     # for h5py\n"
               "```\n\n"
               "```python\n"
               "import h5py\n"
               "with h5py.File(\"datasets/synth/dataset.h5\") as f:\n"
               "    t = f[\"tasks\"]\n"
               "    ok = [i for i, s in enumerate(t[\"status\"].asstr()[:]) if s == \"ok\"]\n"
               "    program, eager_ms = t[\"program_py\"].asstr()[ok[0]], t[\"eager_ms\"][ok[0]]\n"
               "```\n\n"
               "The rollout server serves it as it is (`configs/server.yaml` `tasks.datasets`), leaving out the "
               "rejected rows. Rows the GPU stage rejected keep their reason in `status` (`rejected:<filter>`).\n")

    if g:
        out.append("## Baselines\n")
        bullets = [f"- **Machine:** {g.get('gpu') or '?'}, driver {g.get('driver') or '?'}, CUDA {g.get('cuda') or '?'}, "
                   f"torch {g.get('torch') or '?'}.",
                   "- **Commits:** the GPU stage ran in several device calls, each at its session's commit, all with the "
                   "method and flags below (`tools/dataset/synth_check.py` refuses a dataset whose rows differ in machine, method or "
                   "flags)" + (f"; merged and written at kforge commit {commit}" if commit else "") + ".",
                   f"- **Method** (the same for eager and torch.compile): {g.get('method', '')}."]
        flags = g.get("flags") or {}
        if flags:
            bullets.append("- **Flags:** " + ", ".join(f"`{k}={v}`" for k, v in flags.items()) + ".")
        bullets.append("- Each row's `baseline_json` repeats these, with its own sample count, p10/p90 and date.")
        out.append("\n".join(bullets) + "\n")

    out.append("## Counts\n")
    cpu_rej = s.get("rejected", {})
    funnel = [("drawn", s.get("drawn", 0))]
    funnel += [(f"rejected on the CPU: `{k}`", v) for k, v in cpu_rej.items() if v]
    funnel.append(("passed every CPU filter", s.get("passed", 0)))
    funnel.append(("kept for the GPU stage (the target)", s.get("kept", 0)))
    if g:
        funnel += [(f"rejected on the GPU: `{k}`", v) for k, v in g.get("rejected", {}).items() if v]
        if pending:
            funnel.append(("not measured yet", pending))
        if ic:
            where = f"{ic.get('device') or '?'}, {ic.get('dims') or '?'} dims"
            funnel.append(("kept by the GPU stage", g.get("kept", 0)))
            funnel += [(f"rejected by the input checks ({where}): `{k}`", v) for k, v in ic.get("rejected", {}).items()
                       if v or k != "ablation" or ic.get("ablation_trials")]
        funnel.append(("**kept (status `ok`)**", f"**{kept}**"))
    out.append(table(["stage", "tasks"], funnel) + "\n")
    if ic:
        out.append(input_checks_section(ic))
    if s.get("extra_shapes"):
        out.append(extra_shapes_section(s))
    if s.get("recost"):
        rc = s["recost"]
        out.append(f"**Costs** (`cost` in each spec, the `flops` and `min_bytes` columns) re-derived from the graphs by "
                   f"`kforge tasks recost` after causal `sdpa` FLOPs came to count only the unmasked (query, key) pairs, "
                   f"then convolutions the FLOPs of the cheapest algorithm the libraries run (Winograd F(4x4, 3x3), FFT "
                   f"over 32-wide tiles; stride 1 and dilation 1 only; issue 32): the last recost changed "
                   f"{rc.get('changed', 0)} of {rc.get('graph_tasks', 0)} rows "
                   f"({rc.get('changed_served', 0)} kept); `est_runtime_ms` is the CPU stage's estimate as it was.\n")
    if s.get("headroom"):
        out.append(headroom_section(s["headroom"]))
    if final.get("kept_ops_per_task"):
        out.append(counts("Operators per task", final["kept_ops_per_task"], kept))
        out.append(counts("Splits (heldout shares no operator sequence with train)", final["kept_splits"], kept))
        out.append(counts("Dtypes", final["kept_dtypes"], kept))
        out.append(counts("First operator's family", final["kept_families"], kept))
    if final.get("eager_runtime_ms"):
        out.append(counts("Eager runtime, ms (measured)", final["eager_runtime_ms"], kept))
    if final.get("compile_speedup"):
        out.append(counts("torch.compile speedup over eager (eager ms / compiled ms)", final["compile_speedup"], kept))
        st = final.get("compile_speedup_stats") or {}
        if st:
            out.append(f"Median {st['median']:.2f}, geometric mean {st['geomean']:.2f}, p10 {st['p10']:.2f}, "
                       f"p90 {st['p90']:.2f}; torch.compile is more than 5 % faster on "
                       f"{100 * st['compile_faster_share']:.1f} % of the tasks and more than 5 % slower on "
                       f"{100 * st['compile_slower_share']:.1f} %.\n")

    if calls:
        out.append(time_section(calls, s))
    out.append("## Rebuilding it\n")
    out.append("```bash\n"
               "tools/dataset/synth_dataset.sh prepare                # the CPU stage, here (kforge synth, configs/synth.yaml)\n"
               "bash tools/dataset/synth_dataset.sh gpu BUDGET_S      # on the GPU host, as many calls as it takes (each resumes)\n"
               "tools/dataset/synth_dataset.sh collect FILES_AT       # here, after each call\n"
               "tools/dataset/synth_dataset.sh finish                 # here: merge, summary, plots, this folder\n"
               "```\n\n"
               f"Written {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d')}.\n")
    return "\n".join(x.rstrip("\n") + "\n" for x in out)


def input_checks_section(ic):
    """What the input checks (issue 25) refused, by failing ablation kind and by operator."""
    trials = ic.get("ablation_trials") or 0
    out = [f"**The input checks** (`kforge tasks sensitivity`, {ic.get('device') or '?'}, {ic.get('dims') or '?'} dims, "
           f"{ic.get('draws')} draws of the task's own distribution; `tools/dataset/synth_refilter.py`): each argument replaced "
           "by its mean (`whole`), one random row (`row`) and channel (`channel`) of it replaced by its mean must move "
           "some output beyond tolerance on every draw (`input_matters`)"
           + (f"; and 1 % of each argument's elements replaced by its mean must leave the tolerance on every one of "
              f"{trials} trials under some member of the draw family (`ablation`)." if trials else
              ". The 1 % ablation figure was not part of this run (`--ablation-trials 0`): no row was decided on it.")
           + " Rejected rows keep their baselines and their reason in `status`."
           + (f" Only failures of the kinds {', '.join(f'`{k}`' for k in ic['kinds'])} reject a row as `input_matters` "
              "here." if ic.get("kinds") and set(ic["kinds"]) != {"whole", "row", "channel"} else "") + "\n"]
    caught = ic.get("caught_by_another_member")
    if caught:
        out.append(f"Of the {caught['of']} rows rejected as `input_matters`, {caught['rows']} fail only ablations that "
                   "another member of the draw family moves beyond tolerance on every draw (`--family-diagnosis`): "
                   "verification, which draws every member, would catch a kernel that skips what they skip; the "
                   "check judges the task's own draw.\n")
    kinds = ic.get("rejected_by_kind") or {}
    if kinds:
        out.append(table(["failing kind (a task may fail several)", "tasks"], list(kinds.items())))
    ops = ic.get("rejected_by_operator") or {}
    if ops:
        out.append("Rejected tasks by operator (any node): "
                   + ", ".join(f"`{k}` {v}" for k, v in ops.items()) + ".\n")
    return "\n".join(out) + "\n"


def extra_shapes_section(s):
    """The extra shapes (issue 30) the specs carry: tasks by their number of shapes."""
    added = s.get("extra_shapes_added") or {}
    hist = added.get("served") or s["extra_shapes"]
    n = sum(hist.values())
    with_any = n - hist.get("0", 0)
    whose = "kept (status `ok`)" if added.get("served") else "synthesised"
    how = ("added to the shipped specs by `kforge tasks extra-shapes`" if added else "drawn by `kforge synth`")
    out = [f"**Extra shapes** (`extra_dims` in each spec, {how}; `data_synth/synth/extra_shapes.h`): verification "
           "also runs a candidate at each, so that a kernel hard-coded to the task's own shape fails. Up to "
           f"{added.get('max_shapes', 3)} per task, drawn from its seed: every dim an odd size near 0.3-0.7 of its own "
           "(`odd`), a batch of 1 (`batch_one`), every dim one smaller (`off_by_one`), an empty batch B = 0 (`empty`: only "
           "where every output is then empty and the reference, run on the CPU, accepts it); each only where the task "
           "resolves there with its index ranges unchanged and a footprint no larger than its own (shapes only shrink, "
           f"so the task's stored tolerance still holds). {with_any} of the {n} {whose} tasks ({share(with_any, n)}) have at "
           "least one" + (f"; shapes by kind over every row (the rejected ones too): "
                          f"{', '.join(f'`{k}` {v}' for k, v in added['by_kind'].items())}" if added.get("by_kind") else "")
           + ".\n"]
    out.append(table(["extra shapes", "tasks", "share"], [(k, v, share(v, n)) for k, v in hist.items()]))
    return "\n".join(out) + "\n"


def headroom_section(h):
    """torch.compile's time over each kept task's roofline (issue 32, `kforge tasks headroom`): how many
    tasks can pay tier 3 at all, and the payable split."""
    c, v, n = h.get("ceilings") or {}, h.get("served") or {}, (h.get("served") or {}).get("rows", 0)
    peak = c.get("peak_tflops") or {}
    at = h.get("payable_min_headroom", 1.15)
    unknown = v.get("unknown") or {}
    out = [f"**Headroom** (`compile_headroom`, a column of `dataset.h5` and `tasks.jsonl`, written by `kforge tasks "
           f"headroom`; issue 32): each task's torch.compile time over its roofline on the {h.get('gpu', '?')}, "
           f"max(`min_bytes` / {c.get('copy_gbps', 0):.0f} GB/s copy bandwidth, `flops` / the peak of the math its "
           f"precision contract admits: {peak.get('float16', 0):.1f} TFLOP/s where one 16-bit pass fits the tolerance, "
           f"{peak.get('float32', 0):.1f} for float32 at a tighter one (the split products), {peak.get('integer', 0):.1f} "
           "with no floating tensor; anticheat/README.md's table), with the ceilings the GPU worker measured, as "
           f"recorded in {h.get('source', '?')}. Reward tier 3 pays a candidate more than 5 % faster than torch.compile, so below "
           "1.05 no kernel can earn it, even one at the roofline. "
           f"**{v.get('payable', 0)} of the {n} kept tasks ({share(v.get('payable', 0), n)}) are payable** "
           f"(headroom >= {at:g}); {v.get('at_least_1.05', 0)} reach 1.05, {v.get('at_least_1.1', 0)} 1.1 and "
           f"{v.get('at_least_1.25', 0)} 1.25; torch.compile runs at 90 % of the roofline or more (headroom <= 1.11) on "
           f"{v.get('roofline_share_at_least_0.9', 0)}. Median {v.get('median') or 0:.2f}, p10 {v.get('p10') or 0:.2f}, "
           f"p90 {v.get('p90') or 0:.2f}; bound by bytes {v.get('bound_by', {}).get('bytes', 0)}, by FLOPs "
           f"{v.get('bound_by', {}).get('flops', 0)}; precision "
           + ", ".join(f"`{k}` {x}" for k, x in (v.get("by_precision") or {}).items())
           + (f"; unknown: {', '.join(f'{k} {x}' for k, x in unknown.items() if x)}" if any(unknown.values()) else "")
           + ".\n"]
    best = v.get("compile_best_bytes_gbps") or 0
    if best > c.get("copy_gbps", best):
        ratio = best / c["copy_gbps"]
        out.append(f"The copy bandwidth is no ceiling for reads (a copy reads and writes; a read-mostly kernel streams "
                   f"faster): torch.compile's own times reach `min_bytes` / `compile_ms` = {best:.0f} GB/s on bytes-bound "
                   f"tasks, {ratio:.3f} x the copy figure, which is why some headrooms are below 1. A kernel 5 % faster "
                   f"than torch.compile at that bandwidth needs a headroom of 1.05 x {ratio:.3f} = {1.05 * ratio:.2f}: hence "
                   f"the payable split's {at:g}.\n")
    out.append(table(["compile_headroom", "tasks", "share"], [(k, x, share(x, n)) for k, x in (v.get("histogram") or {}).items()]))
    out.append(f"The payable split for training: `kforge tasks export dataset.h5.xz --status ok --min-headroom {at:g} "
               f"--format jsonl --out payable.jsonl` (`count`, `list` take `--min-headroom` too), or serve it with "
               f"`tasks.min_headroom: {at:g}` in configs/server.yaml.\n")
    return "\n".join(out) + "\n"


def fmt_window(w):
    if not w:
        return "the configured window"
    return f"{w[0]:g}-{w[1]:g} ms"


def load_json(path):
    """The JSON document at `path`, or None after saying on stderr why it could not be read."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        print(f"synth_readme: {path}: {e}", file=sys.stderr)
        return None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("summary")
    ap.add_argument("out")
    ap.add_argument("--files", default=None, help="the folder whose files the table lists with their sizes "
                                                 "(default: the README's own folder)")
    ap.add_argument("--commit", default=os.environ.get("KFORGE_COMMIT", ""))
    ap.add_argument("--calls-json", default=None, help="tools/dataset/synth_calls_report.py --json output: adds how long it took")
    a = ap.parse_args(argv)
    s = load_json(a.summary)
    if s is None:
        return 2
    if "drawn" not in s:
        print(f"synth_readme: {a.summary}: not a kforge synth summary (no 'drawn')", file=sys.stderr)
        return 2
    calls = load_json(a.calls_json) if a.calls_json else None
    if a.calls_json and calls is None:
        return 2
    text = render(s, a.files or os.path.dirname(os.path.abspath(a.out)), a.commit, calls)
    with open(a.out, "w") as f:
        f.write(text)
    print(f"synth_readme: wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
