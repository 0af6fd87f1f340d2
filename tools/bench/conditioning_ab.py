"""The conditioning and load-bench record of tools/bench/overhead_ab.sh (KFORGE_AB_BENCHES with
`conditioning` and/or `serve`): a base tree and this one, run alternately on one GPU host.

- conditioning: kforge_robustness_coverage's per-task rows on the same sample tasks. Per side, the
  mean and median time a task's conditioning took; new / base; and whether the two trees decided
  the same conditions: per task and variant, the same `usable`, and worst ratios within 1e-6
  relative (the float64 comparison is the same arithmetic in another order). Tasks where a side ran
  out of device memory (a variant's reason says so) are counted apart: there the conditions differ
  by design, and the worker would have refused to judge the task.
- serve: the load bench's records (serve_bench_gpu_*_ab_SIDE_R.json). Judged candidates per GPU-hour,
  the verify's worker time and its conditioning, the lane's shares; new / base.

  python tools/bench/conditioning_ab.py OUTDIR ROUNDS   writes OUTDIR/conditioning_ab.json, prints a table
"""
import datetime
import glob
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import results_doc  # noqa: E402

SERVE_FIGURES = ("judged_candidates_per_gpu_hour", "verify_worker_ms_mean", "verify_robustness_conditioning_ms_mean",
                 "verify_verify_ms_mean", "submit_worker_ms_mean", "lane_share_rest_pct", "lane_share_timing_pct",
                 "lane_share_kernels_pct", "lane_share_harness_gpu_pct", "lane_share_conditioning_pct", "submit_speedup_median_under_load")


def out_of_memory(row):
    return any("out of memory" in (v.get("reason") or "") for v in row["variants"].values())


def same_conditions(a, b):
    """True when two rows of one task decided the same variants (usable, worst ratio to 1e-6)."""
    if set(a["variants"]) != set(b["variants"]):
        return False
    for name, va in a["variants"].items():
        vb = b["variants"][name]
        if va["usable"] != vb["usable"]:
            return False
        wa, wb = va["worst_ratio"], vb["worst_ratio"]
        if abs(wa - wb) > 1e-6 * max(abs(wa), abs(wb), 1e-12):
            return False
    return True


def conditioning(out, rounds):
    """(figures, lines) over the rounds' conditioning runs, on the tasks both sides finished."""
    rows = {"base": {}, "new": {}}
    for side in rows:
        for r in range(1, rounds + 1):
            p = os.path.join(out, f"conditioning_{side}_{r}.json")
            if os.path.exists(p):
                for t in json.load(open(p))["tasks"]:
                    rows[side].setdefault(t["id"], []).append(t)
    common = sorted(set(rows["base"]) & set(rows["new"]))
    if not common:
        return {}, ["conditioning: no task finished on both sides"]
    ms = {s: [statistics.mean(t["ms"] for t in rows[s][i]) for i in common] for s in rows}
    oom = {s: sum(out_of_memory(rows[s][i][0]) for i in common) for s in rows}
    both_fit = [i for i in common if not out_of_memory(rows["base"][i][0]) and not out_of_memory(rows["new"][i][0])]
    same = sum(same_conditions(rows["base"][i][0], rows["new"][i][0]) for i in both_fit)
    f = {"conditioning_tasks_count": len(common),
         "base_conditioning_ms_mean": statistics.mean(ms["base"]), "new_conditioning_ms_mean": statistics.mean(ms["new"]),
         "base_conditioning_ms_p50": statistics.median(ms["base"]), "new_conditioning_ms_p50": statistics.median(ms["new"]),
         "base_conditioning_out_of_memory_count": oom["base"], "new_conditioning_out_of_memory_count": oom["new"],
         "conditioning_same_conditions_count": same, "conditioning_compared_count": len(both_fit)}
    f["new_over_base_conditioning_ms_mean"] = f["new_conditioning_ms_mean"] / f["base_conditioning_ms_mean"]
    f["new_over_base_conditioning_ms_p50"] = f["new_conditioning_ms_p50"] / f["base_conditioning_ms_p50"]
    lines = [f"conditioning over {len(common)} tasks: mean {f['base_conditioning_ms_mean']:.0f} -> {f['new_conditioning_ms_mean']:.0f} ms "
             f"({f['new_over_base_conditioning_ms_mean']:.3f}x), p50 {f['base_conditioning_ms_p50']:.0f} -> "
             f"{f['new_conditioning_ms_p50']:.0f} ms; out of memory on {oom['base']} -> {oom['new']} tasks; "
             f"the same conditions on {same} of {len(both_fit)} tasks both sides conditioned"]
    for i in common:
        b, n = rows["base"][i][0], rows["new"][i][0]
        mark = "oom" if out_of_memory(b) or out_of_memory(n) else ("same" if same_conditions(b, n) else "DIFFERENT")
        lines.append(f"  {i:18} {b['dtype']:9} {b['ops'][:30]:30} {b['ms']:8.0f} {n['ms']:8.0f} ms  {mark}")
    return f, lines


def serve(out, rounds):
    """(figures, lines): the load bench's figures per side (mean over rounds) and new / base."""
    sides = {}
    for side in ("base", "new"):
        paths = [p for r in range(1, rounds + 1) for p in glob.glob(os.path.join(out, f"serve_bench_gpu_*_ab_{side}_{r}.json"))]
        docs = [json.load(open(p)) for p in paths]
        if docs:
            sides[side] = {k: statistics.mean(d["figures"][k] for d in docs) for k in SERVE_FIGURES if all(k in d["figures"] for d in docs)}
    if len(sides) < 2:
        return {}, ["serve: no record on both sides"]
    f, lines = {}, [f"{'load bench':44} {'base':>10} {'new':>10} {'new/base':>9}"]
    for k in SERVE_FIGURES:
        if k in sides["base"] and k in sides["new"]:
            b, n = sides["base"][k], sides["new"][k]
            f[f"base_{k}"], f[f"new_{k}"] = b, n
            if b:
                f[f"new_over_base_{k}"] = n / b
            lines.append(f"{k:44} {b:10.1f} {n:10.1f} {n / b if b else float('nan'):9.3f}")
    return f, lines


def main(argv):
    out, rounds = argv[1], int(argv[2])
    figures, lines = conditioning(out, rounds)
    f2, l2 = serve(out, rounds)
    figures.update(f2)
    print("\n".join(lines + l2))
    if not figures:
        return 1
    meta = {}
    records = sorted(glob.glob(os.path.join(out, "conditioning_new_*.json")))
    records += sorted(glob.glob(os.path.join(out, "serve_bench_gpu_*_ab_new_*.json")))
    for p in records:
        d = json.load(open(p))
        meta = {k: d.get(k) for k in ("gpu", "driver", "cuda", "torch")}
        break
    doc = {**meta, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "commit": results_doc.commit(),
           "command": f"KFORGE_AB_BENCHES='conditioning serve' tools/bench/overhead_ab.sh BUILD OUTDIR {rounds}: "
                      "kforge_robustness_coverage on the same sample tasks and serve_bench.py --pairs samples "
                      f"({os.environ.get('KFORGE_AB_SERVE_EPISODES', '32')} episodes, today's lane settings, fresh sources), "
                      "base and new alternating on one host",
           "figures": figures,
           "details": {"lines": lines + l2}}
    results_doc.write(os.path.join(out, "conditioning_ab.json"), doc, "conditioning_ab")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
