#!/usr/bin/env python3
"""Applies the input checks (issue 25: every input matters; `kforge tasks sensitivity`,
data_synth/reference/sensitivity.h) to a merged dataset: every kept row (status `ok`) that the
checks' JSONL says failed becomes `rejected:input_matters` or `rejected:ablation` (its baselines kept,
so that the rejection can be undone), and the dataset's summary gains an `input_checks` block: the
options, the rows checked, rejected per reason, per ablation kind and per operator, and the kept
tasks' counts and histograms after the checks (what tools/dataset/synth_readme.py shows). Rows go through
`kforge tasks set-baselines`, so that only kforge writes the HDF5 layout.

    tools/dataset/synth_refilter.py DATASET.h5 --from SENSITIVITY.jsonl [--summary-dir DIR] [--allow-partial]
                            [--kinds whole,row,channel]

Idempotent: rows an earlier run rejected are decided again from the JSONL. Every row decided must
have a line (else an error naming one, unless --allow-partial); a line whose check failed to run
(reason_code `error`) keeps its row and is counted. --summary-dir (default: the dataset's folder)
holds summary.json and summary.txt, which get the same block. --kinds: the ablation kinds of the
input checks whose failure rejects a row as input_matters (default every kind: whole, row, channel;
e.g. `--kinds whole` keeps rows whose only failures are a row or a channel).
"""
import argparse
import collections
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from synth_gpu.common import InputError, percentile, run_kforge, speedup_stats, runtime_bin, speedup_bin, RUNTIME_BINS, SPEEDUP_BINS  # noqa: E402

# The reasons a row can be rejected for by the input checks (sensitivity.h's reason codes).
REASONS = ["input_matters", "ablation"]
TOOL = "tools/synth_refilter.py 1 (kforge tasks sensitivity)"  # an identity, kept from before tools/dataset/


def read_rows(dataset):
    with tempfile.TemporaryDirectory(prefix="synth_refilter_") as d:
        out = os.path.join(d, "rows.jsonl")
        run_kforge("tasks", "export", dataset, "--status", "all", "--format", "jsonl", "--out", out)
        with open(out) as f:
            return [json.loads(line) for line in f]


def read_checks(path):
    by_name = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                j = json.loads(line)
            except ValueError as e:
                raise InputError(f"{path}:{n}: not JSON ({e})")
            if not isinstance(j, dict) or "name" not in j or "passed" not in j:
                raise InputError(f"{path}:{n}: not a line of kforge tasks sensitivity (no name or passed)")
            by_name[j["name"]] = j  # the last line of a name wins
    return by_name


INPUT_KINDS = ("whole", "row", "channel")


def rejected_code(line, kinds):
    """The reason code a line rejects its row for, or None: input_matters where an input fails one
    of `kinds`, ablation where the ablation check failed (and no input check rejects it)."""
    if line["passed"] or line.get("reason_code") not in REASONS:
        return None
    if not line.get("inputs_matter", line.get("reason_code") != "input_matters"):
        if failing_kinds(line) & set(kinds):
            return "input_matters"
    if line.get("ablation_passed") is False:
        return "ablation"
    return None


def failing_kinds(line):
    """The ablation kinds that failed on some input: whole, row, channel, ablation."""
    kinds = set()
    for i in line.get("inputs", []):
        if i.get("matters_whole") is False:
            kinds.add("whole")
        if i.get("matters_row") is False:
            kinds.add("row")
        if i.get("matters_channel") is False:
            kinds.add("channel")
        best = i.get("ablation_rate_best")
        if best is not None and best < 0.99:
            kinds.add("ablation")
    return kinds


def counts(values, order=None):
    c = collections.Counter(values)
    keys = order if order else sorted(c, key=lambda k: (len(str(k)), str(k)))
    return {str(k): c.get(k, 0) for k in keys}


def block(rows, decided, checks, new_status):
    kept = [r for r in rows if new_status.get(r["id"], r["status"]) == "ok"]
    rejected = {k: 0 for k in REASONS}
    by_kind, by_op, first_op = collections.Counter(), collections.Counter(), collections.Counter()
    examples = {}
    for r in decided:
        s = new_status[r["id"]]
        if s == "ok":
            continue
        code = s.split(":", 1)[1]
        rejected[code] += 1
        line = checks[r["id"]]
        for k in failing_kinds(line):
            by_kind[k] += 1
        for op in set(filter(None, r["ops"].split(","))):
            by_op[op] += 1
        first_op[r["ops"].split(",")[0]] += 1
        examples.setdefault(code, f"{r['id']} ({r['ops']}): {line.get('reason', '')}")
    errors = sorted(r["id"] for r in decided if checks[r["id"]].get("reason_code") == "error")
    # --family-diagnosis lines: rows rejected as input_matters whose every failing ablation another
    # member of the draw family moves (verification would catch the shortcut; the check judges plain).
    diagnosed = [r for r in decided if new_status[r["id"]] == "rejected:input_matters"
                 and any("family_member" in i for i in checks[r["id"]].get("inputs", []))]
    caught = None
    if diagnosed:
        def all_caught(line):
            for i in line.get("inputs", []):
                for k in INPUT_KINDS:
                    if i.get(f"matters_{k}") is False and (i.get("family_member") or {}).get(k) in (None, "none"):
                        return False
            return True
        caught = {"rows": sum(1 for r in diagnosed if all_caught(checks[r["id"]])), "of": len(diagnosed)}
    one = next(iter(checks.values()), {})
    rates = [checks[r["id"]]["min_best_ablation_rate"] for r in decided
             if checks[r["id"]].get("min_best_ablation_rate") is not None]
    plain = [i["ablation_rate_plain"] for r in decided for i in checks[r["id"]].get("inputs", [])
             if i.get("ablation_rate_plain") is not None]
    ms = [checks[r["id"]].get("ms") or 0 for r in decided]
    speedups = [r["eager_ms"] / r["compile_ms"] for r in kept if r.get("eager_ms") and r.get("compile_ms")]
    st = speedup_stats(speedups)
    return {
        "tool": TOOL,
        "dims": one.get("dims"), "device": one.get("device"), "draws": one.get("draws"),
        "ablation_trials": one.get("ablation_trials"), "seed": one.get("seed"),
        "checked": len(decided),
        "rejected": rejected,
        "kept": len(kept),
        "errors": len(errors),
        "caught_by_another_member": caught,
        "rejected_by_kind": dict(sorted(by_kind.items())),
        "rejected_by_operator": dict(sorted(by_op.items(), key=lambda kv: (-kv[1], kv[0]))),
        "rejected_by_first_operator": dict(sorted(first_op.items(), key=lambda kv: (-kv[1], kv[0]))),
        "examples": examples,
        "min_best_ablation_rate": {"below_0.99": sum(1 for x in rates if x < 0.99), "n": len(rates),
                                   "p10": percentile(rates, 0.1), "median": percentile(rates, 0.5)},
        "ablation_rate_plain": {"below_0.99": sum(1 for x in plain if x < 0.99), "n": len(plain)},
        "check_ms": {"total": round(sum(ms), 1), "median": percentile(ms, 0.5), "p90": percentile(ms, 0.9)},
        "kept_ops_per_task": counts([r["n_ops"] for r in kept]),
        "kept_splits": counts([r["split"] for r in kept], sorted({r["split"] for r in kept})),
        "kept_dtypes": counts([r["dtype"] for r in kept], sorted({r["dtype"] for r in kept})),
        "kept_families": counts([r["family"] for r in kept], sorted({r["family"] for r in kept})),
        "eager_runtime_ms": counts([runtime_bin(r["eager_ms"]) for r in kept if r.get("eager_ms")], RUNTIME_BINS),
        "compile_speedup": counts([speedup_bin(s) for s in speedups], SPEEDUP_BINS),
        "compile_speedup_stats": st,
    }


def table(b):
    def pct(c, n):
        return f"{c:<8d} ({100.0 * c / n:.1f} %)" if n else str(c)
    rows = [("Input checks (kforge tasks sensitivity)", ""),
            ("  options", f"{b['device']}, {b['dims']} dims, {b['draws']} draws, {b['ablation_trials']} ablation trials"),
            ("  checked (kept by the GPU stage)", str(b["checked"]))]
    rows += [(f"  rejected: {k}", pct(v, b["checked"])) for k, v in b["rejected"].items()]
    rows.append(("  kept (status ok)", pct(b["kept"], b["checked"])))
    if b["errors"]:
        rows.append(("  check failed to run (kept)", str(b["errors"])))
    rows.append(("  rejected by failing ablation kind", ""))
    rows += [(f"    {k}", str(v)) for k, v in b["rejected_by_kind"].items()]
    rows.append(("  rejected by operator (any node)", ""))
    rows += [(f"    {k}", str(v)) for k, v in b["rejected_by_operator"].items()]
    return "".join(f"{a:<38s}{v}\n" if v else f"{a}\n" for a, v in rows)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dataset")
    ap.add_argument("--from", dest="checks", required=True, help="kforge tasks sensitivity's JSONL")
    ap.add_argument("--summary-dir", default=None)
    ap.add_argument("--allow-partial", action="store_true", help="rows without a line keep their status")
    ap.add_argument("--kinds", default=",".join(INPUT_KINDS),
                    help="the input checks' ablation kinds whose failure rejects a row (whole, row, channel)")
    a = ap.parse_args(argv)
    kinds = [k for k in a.kinds.split(",") if k]
    if not kinds or set(kinds) - set(INPUT_KINDS):
        ap.error(f"--kinds takes some of {', '.join(INPUT_KINDS)}, not {a.kinds!r}")
    try:
        rows = read_rows(a.dataset)
        checks = read_checks(a.checks)
        mine = {f"rejected:{k}" for k in REASONS}
        candidates = [r for r in rows if r["status"] == "ok" or r["status"] in mine]
        missing = [r["id"] for r in candidates if r["id"] not in checks]
        if missing and not a.allow_partial:
            raise InputError(f"{a.checks}: no line for {len(missing)} row(s) to decide, e.g. {missing[0]} "
                             f"(run kforge tasks sensitivity over every kept row, or pass --allow-partial)")
        decided = [r for r in candidates if r["id"] in checks]
        new_status = {}
        for r in decided:
            code = rejected_code(checks[r["id"]], kinds)
            new_status[r["id"]] = f"rejected:{code}" if code else "ok"
        settings_summary = json.loads(run_kforge("tasks", "export-gpu", a.dataset, "--shard", "0/1").splitlines()[0])
        summary = json.loads(settings_summary.get("summary_json") or "{}")
        b = block(rows, decided, checks, new_status)
        b["kinds"] = kinds
        summary["input_checks"] = b
        lines = []
        for r in decided:
            lines.append({"kind": "row", "id": r["id"], "graph_hash": r["graph_hash"], "status": new_status[r["id"]],
                          "eager_ms": r.get("eager_ms"), "compile_ms": r.get("compile_ms"), "baseline": r.get("baseline")})
        lines.append({"kind": "attrs", "attrs": {"summary_json": json.dumps(summary)}})
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", prefix="synth_refilter_", delete=False) as f:
            for line in lines:
                f.write(json.dumps(line, allow_nan=False) + "\n")
        try:
            run_kforge("tasks", "set-baselines", a.dataset, "--from", f.name)
        finally:
            os.unlink(f.name)
    except InputError as e:
        print(f"synth_refilter: {e}", file=sys.stderr)
        return 1

    d = a.summary_dir or os.path.dirname(os.path.abspath(a.dataset))
    sj, st = os.path.join(d, "summary.json"), os.path.join(d, "summary.txt")
    if os.path.exists(sj):
        with open(sj) as f:
            file_summary = json.load(f)
        file_summary["input_checks"] = b
        with open(sj, "w") as f:
            json.dump(file_summary, f, indent=2)
            f.write("\n")
    if os.path.exists(st):
        old = open(st).read()
        marker = "Input checks (kforge tasks sensitivity)"
        if marker in old:
            old = old[:old.index(marker)]
        with open(st, "w") as f:
            f.write(old + table(b))
    print(table(b), end="")
    print(f"synth_refilter: {b['checked']} row(s) decided: {b['kept']} kept, "
          + ", ".join(f"{v} {k}" for k, v in b["rejected"].items())
          + (f"; {b['errors']} check(s) failed to run (kept)" if b["errors"] else "") + f"; wrote {a.dataset}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
