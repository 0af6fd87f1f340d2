#!/usr/bin/env python3
"""Checks a merged task dataset (after tools/dataset/synth_gpu.py --merge) against what the dataset promises
its users, and says which rows break what:

- ids unique, and no two tasks with the same canonical graph hash (structural duplicates);
- no operator sequence in both train and heldout, and heldout at least --min-heldout-pct of the kept;
- every kept task (status `ok`): eager time within the GPU stage's window, a positive
  torch.compile time, its spec's `baselines:` equal to the columns, and a baseline record;
- one machine and one method for every baseline (GPU, torch, CUDA, method text, flags), with TF32
  off (the precision contract);
- every other row is `cpu_ok` (not measured yet), `rejected:<a GPU filter>` or `rejected:<an input
  check>` (tools/dataset/synth_refilter.py).

    python3 tools/dataset/synth_check.py DATASET.h5 [--min-heldout-pct 5]

Exits 1 when a check fails (each failure on its own line, with up to 5 example ids), 0 otherwise;
a dataset with rows still unmeasured passes with a line that says so.
"""
import argparse
import collections
import json
import math
import os
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

COLUMNS = ["id", "split", "status", "graph_hash", "op_sequence", "eager_ms", "compile_ms", "baseline_json", "spec_yaml"]


def check(cols, attrs, min_heldout_pct, reasons):
    fails = []

    def fail(what, ids):
        if ids:
            fails.append(f"{what}: {len(ids)} row(s), e.g. {', '.join(map(str, ids[:5]))}")

    ids = cols["id"]
    n = len(ids)
    dup = [i for i, c in collections.Counter(ids).items() if c > 1]
    fail("ids that are not unique", dup)
    by_hash = collections.defaultdict(list)
    for tid, h in zip(ids, cols["graph_hash"]):
        by_hash[h].append(tid)
    fail("structural duplicates (same graph hash)", [v[1] for v in by_hash.values() if len(v) > 1])

    ok = [i for i in range(n) if cols["status"][i] == "ok"]
    seqs = collections.defaultdict(set)
    for i in range(n):
        seqs[cols["op_sequence"][i]].add(cols["split"][i])
    fail("operator sequences in both train and heldout", sorted(s for s, sp in seqs.items() if {"train", "heldout"} <= sp))
    heldout = sum(1 for i in ok if cols["split"][i] == "heldout")
    if ok and 100.0 * heldout / len(ok) < min_heldout_pct:
        fails.append(f"heldout is {100.0 * heldout / len(ok):.1f} % of the kept tasks, under {min_heldout_pct:g} %")

    try:
        window = json.loads(attrs.get("summary_json") or "{}").get("gpu", {}).get("window_ms")
    except ValueError:
        window = None
    if ok and not window:
        fails.append("no GPU-stage window in the summary (was the dataset merged by synth_gpu.py --merge?)")
    lo, hi = window or (0.0, math.inf)
    fail(f"kept tasks with an eager time outside {lo:g}-{hi:g} ms",
         [ids[i] for i in ok if not (math.isfinite(cols["eager_ms"][i]) and lo <= cols["eager_ms"][i] <= hi)])
    fail("kept tasks without a positive torch.compile time",
         [ids[i] for i in ok if not (math.isfinite(cols["compile_ms"][i]) and cols["compile_ms"][i] > 0)])

    machines, methods, flag_sets, no_record, spec_off, tf32 = collections.Counter(), collections.Counter(), \
        collections.Counter(), [], [], []
    for i in ok:
        try:
            b = json.loads(cols["baseline_json"][i] or "")
        except ValueError:
            no_record.append(ids[i])
            continue
        machines[(b.get("gpu", ""), b.get("torch", ""), b.get("cuda", ""))] += 1
        methods[b.get("method", "")] += 1
        flags = b.get("flags") or {}
        flag_sets[json.dumps(flags, sort_keys=True)] += 1
        if flags.get("allow_tf32_cublas") != "false" or flags.get("allow_tf32_cudnn") != "false":
            tf32.append(ids[i])
        sb = (yaml.safe_load(cols["spec_yaml"][i]) or {}).get("baselines") or {}  # written to 6 significant digits
        e, c = sb.get("eager_ms"), sb.get("compile_ms")
        if not (isinstance(e, (int, float)) and isinstance(c, (int, float))
                and math.isclose(e, cols["eager_ms"][i], rel_tol=1e-5) and math.isclose(c, cols["compile_ms"][i], rel_tol=1e-5)):
            spec_off.append(ids[i])
    fail("kept tasks without a baseline record", no_record)
    fail("kept tasks whose spec's baselines differ from the columns", spec_off)
    fail("baselines measured with TF32 allowed", tf32)
    for what, counter in (("machines (GPU, torch, CUDA)", machines), ("method texts", methods), ("flag sets", flag_sets)):
        if len(counter) > 1:
            fails.append(f"baselines from {len(counter)} {what}, not one: "
                         + "; ".join(f"{k!s:.80} x{v}" for k, v in counter.most_common(3)))

    bad_status = [ids[i] for i in range(n) if cols["status"][i] != "ok" and cols["status"][i] != "cpu_ok"
                  and not (cols["status"][i].startswith("rejected:") and cols["status"][i].split(":", 1)[1] in reasons)]
    fail("rows with a status that is neither ok, cpu_ok nor a GPU filter's or input check's rejection", bad_status)
    pending = sum(1 for s in cols["status"] if s == "cpu_ok")
    info = (f"{n} rows: {len(ok)} kept ({heldout} heldout, {100.0 * heldout / len(ok):.1f} %), "
            f"{n - len(ok) - pending} rejected, {pending} not measured yet" if ok else f"{n} rows, none kept yet")
    if machines:
        (gpu, torch, cuda), _ = machines.most_common(1)[0]
        info += f"; baselines on {gpu}, torch {torch}, CUDA {cuda}"
    return fails, info, pending


def read_columns(dataset):
    """(attrs, {column: list}) of every row, as kforge reads the dataset (`kforge tasks export
    --status all --format jsonl`; the summary from `kforge tasks export-gpu`'s settings line)."""
    import tempfile
    from synth_gpu import export_tasks, run_kforge
    settings, _ = export_tasks(dataset, "all/1")
    with tempfile.TemporaryDirectory(prefix="synth_check_") as d:
        out = os.path.join(d, "rows.jsonl")
        run_kforge("tasks", "export", dataset, "--status", "all", "--format", "jsonl", "--out", out)
        with open(out) as f:
            rows = [json.loads(line) for line in f]
    cols = {c: [] for c in COLUMNS}
    for r in rows:
        for c in COLUMNS:
            if c == "baseline_json":
                cols[c].append(json.dumps(r["baseline"]) if r.get("baseline") is not None else "")
            elif c in ("eager_ms", "compile_ms"):
                cols[c].append(math.nan if r.get(c) is None else r[c])
            else:
                cols[c].append(r[c])
    return {"summary_json": settings.get("summary_json", "")}, cols


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dataset")
    ap.add_argument("--min-heldout-pct", type=float, default=5.0)
    a = ap.parse_args(argv)
    from synth_gpu import REASONS, InputError
    from synth_refilter import REASONS as INPUT_CHECK_REASONS
    try:
        attrs, cols = read_columns(a.dataset)
    except InputError as e:
        print(f"synth_check: {e}", file=sys.stderr)
        return 2
    fails, info, pending = check(cols, attrs, a.min_heldout_pct, set(REASONS) | set(INPUT_CHECK_REASONS))
    print(f"synth_check: {info}")
    for f in fails:
        print(f"synth_check: FAILED: {f}")
    if pending:
        print(f"synth_check: PARTIAL: {pending} row(s) have not been through the GPU stage yet")
    print(f"synth_check: {'every check passed' if not fails else f'{len(fails)} check(s) failed'}")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
