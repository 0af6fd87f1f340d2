"""The record of tools/bench/overhead_ab.sh: `kforge_eval_bench overhead` (and `aa`, figures prefixed
aa_) of a base tree and this one, run alternately on one GPU host. Per figure of the bench's records (harness GPU work per verify and
its stages, host overhead; p50 and p95 over the requests of a run), the mean over rounds on each
side, new / base, and the spread between rounds on each side (how far apart the same tree's runs
were: the noise a ratio must clear).

  python tools/bench/overhead_ab.py OUTDIR ROUNDS     writes OUTDIR/overhead_ab.json and prints a table
"""
import datetime
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import results_doc  # noqa: E402


def side_means(runs):
    """{figure: (mean, spread)} over the runs of one side: spread = (max - min) / mean."""
    out = {}
    for k in sorted(set.intersection(*(set(r) for r in runs))):
        v = [r[k] for r in runs]
        m = sum(v) / len(v)
        out[k] = (m, (max(v) - min(v)) / m if m else 0.0)
    return out


def summarise(base_runs, new_runs):
    """(figures, table rows): base and new means, new / base and each side's spread per figure."""
    b, n = side_means(base_runs), side_means(new_runs)
    figures, rows = {}, []
    for k in sorted(set(b) & set(n)):
        if k.endswith("_count") or k == "verify_calls_p50":
            continue
        (bm, bs), (nm, ns) = b[k], n[k]
        figures[f"base_{k}"] = bm
        figures[f"new_{k}"] = nm
        figures[f"base_{k}_spread"] = bs
        figures[f"new_{k}_spread"] = ns
        if bm > 0:
            figures[f"new_over_base_{k}"] = nm / bm
        rows.append((k, bm, nm, nm / bm if bm > 0 else float("nan"), bs, ns))
    return figures, rows


def main(argv):
    out, rounds = argv[1], int(argv[2])
    sides = {"base": [], "new": []}
    docs = {}
    for side in sides:
        for r in range(1, rounds + 1):
            p = os.path.join(out, f"overhead_{side}_{r}.json")
            if os.path.exists(p):
                docs[side] = json.load(open(p))
                figures = dict(docs[side]["figures"])
                # the round's A/A timing beside it (the timed calls' checks), its figures prefixed aa_
                a = os.path.join(out, f"aa_{side}_{r}.json")
                if os.path.exists(a):
                    figures.update({f"aa_{k}": v for k, v in json.load(open(a))["figures"].items() if isinstance(v, (int, float))})
                sides[side].append(figures)
    if not sides["base"] or not sides["new"]:
        print(f"overhead_ab: no complete pair of runs in {out} (base {len(sides['base'])}, new {len(sides['new'])})", file=sys.stderr)
        return 1
    figures, rows = summarise(sides["base"], sides["new"])
    figures["rounds_base_count"] = len(sides["base"])
    figures["rounds_new_count"] = len(sides["new"])
    print(f"{'figure':48} {'base':>10} {'new':>10} {'new/base':>9} {'spread b':>9} {'spread n':>9}")
    for k, bm, nm, ratio, bs, ns in rows:
        print(f"{k:48} {bm:10.3f} {nm:10.3f} {ratio:9.3f} {bs:9.1%} {ns:9.1%}")
    d = docs["new"]
    doc = {"gpu": d.get("gpu"), "driver": d.get("driver"), "cuda": d.get("cuda"), "torch": d.get("torch"),
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "commit": results_doc.commit(),
           "command": f"tools/bench/overhead_ab.sh BUILD OUTDIR {rounds}: kforge_eval_bench overhead --repeats 2 and "
                      "aa --task softmax_rows (its fused candidate), base and new alternating on one host",
           "figures": figures,
           "details": {"method": "per figure, the mean over rounds of each side's run record; new_over_base is new / base; "
                                 "a side's spread is (max - min) / mean over its rounds"}}
    results_doc.write(os.path.join(out, "overhead_ab.json"), doc, "overhead_ab")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
