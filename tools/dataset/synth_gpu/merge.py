"""--merge: the part files back into the dataset (through `kforge tasks set-baselines`, so that
only kforge writes the HDF5 layout and the task specs), with the GPU stage's summary; and
--compare: two runs over the same rows."""
import datetime
import json
import math
import os
import subprocess
import sys
import tempfile

from .common import PHASES, REASONS, ROOT, RUNTIME_BINS, SPEEDUP_BINS, TOOL, InputError, export_tasks, percentile, \
    run_kforge, runtime_bin, speedup_bin, speedup_stats
from .records import part_files, pick_records, read_records

sys.path.insert(0, os.path.join(ROOT, "tools", "bench"))
import results_doc  # noqa: E402


def gpu_summary(ids, by_id, n_tasks, meta=None):
    """The GPU stage's counts and histograms. `meta` (id -> {"n_ops", "split", "dtype", "family"},
    from the dataset's columns) adds what the shipped dataset holds: the kept tasks per operator
    count, split, dtype and first-operator family (the CPU summary counts them before the GPU stage)."""
    kept = [by_id[i] for i in ids if i in by_id and by_id[i]["status"] == "ok"]
    measured = [by_id[i] for i in ids if i in by_id]
    rejected = {k: 0 for k in REASONS}
    for r in measured:
        if r["status"] != "ok":
            k = r.get("reason") or r["status"].split(":", 1)[-1]
            rejected[k] = rejected.get(k, 0) + 1
    kept_by = {}
    if meta:
        for key in ("n_ops", "split", "dtype", "family"):
            c = {}
            for r in kept:
                v = str(meta.get(r["id"], {}).get(key, "?"))
                c[v] = c.get(v, 0) + 1
            kept_by[key] = dict(sorted(c.items(), key=lambda kv: (len(kv[0]), kv[0]) if key == "n_ops" else kv[0]))
    hist = {b: 0 for b in RUNTIME_BINS}
    hist_c = {b: 0 for b in RUNTIME_BINS}
    sp_hist = {b: 0 for b in SPEEDUP_BINS}
    speedups = []
    for r in kept:
        hist[runtime_bin(r["eager_ms"])] += 1
        if r.get("compile_ms"):
            hist_c[runtime_bin(r["compile_ms"])] += 1
            s = r["eager_ms"] / r["compile_ms"]
            speedups.append(s)
            sp_hist[speedup_bin(s)] += 1
    env = (kept or measured or [{}])[-1].get("env", {})
    sp = speedup_stats(speedups)
    # The cost model's estimate against the measurement (every task with an eager time), to tune
    # configs/synth.yaml's cost_model and target window.
    ratios = [r["eager_ms"] / r["est_runtime_ms"] for r in measured
              if r.get("eager_ms") and (r.get("est_runtime_ms") or 0) > 0]
    est = {}
    if ratios:
        est = {"median": percentile(ratios, 0.5), "p10": percentile(ratios, 0.1), "p90": percentile(ratios, 0.9),
               "n": len(ratios)}
    return {
        "tool": TOOL,
        "tasks": n_tasks,
        "measured": len(measured),
        "pending": n_tasks - len(measured),
        "kept": len(kept),
        "rejected": rejected,
        "eager_runtime_ms": hist,
        "compile_runtime_ms": hist_c,
        "compile_speedup": sp_hist,
        "compile_speedup_stats": sp,
        "eager_over_estimate": est,
        "kept_ops_per_task": kept_by.get("n_ops", {}),
        "kept_splits": kept_by.get("split", {}),
        "kept_dtypes": kept_by.get("dtype", {}),
        "kept_families": kept_by.get("family", {}),
        "seconds": {"serial_wall_s": round(sum(r.get("wall_s") or 0 for r in measured), 1),
                    "phase_s": {k: round(sum((r.get("phase_s") or {}).get(k, 0) for r in measured), 1)
                                for k in PHASES + ("other",) if any(k in (r.get("phase_s") or {}) for r in measured)},
                    "compile_cold_s": round(sum(r.get("compile_cold_s") or 0 for r in measured), 1),
                    "compile_warm_s": round(sum(r.get("compile_warm_s") or 0 for r in measured), 1)},
        "gpu": env.get("gpu", ""), "driver": env.get("driver", ""), "torch": env.get("torch", ""),
        "cuda": env.get("cuda", ""), "device": env.get("device", ""),
        "dims": sorted({r.get("dims", "") for r in measured}),
        "window_ms": (measured[-1].get("window_ms") if measured else None),
        "method": (measured[-1].get("method") if measured else ""),
        "flags": (measured[-1].get("flags") if measured else {}),
    }


def summary_table(g):
    def pct(c, n):
        return f"{c:<8d} ({100.0 * c / n:.1f} %)" if n else str(c)
    rows = [("GPU stage (tools/dataset/synth_gpu.py)", ""), ("  tasks", str(g["tasks"])), ("  measured", str(g["measured"])),
            ("  pending", str(g["pending"]))]
    for k, v in g["rejected"].items():
        rows.append((f"  rejected: {k}", pct(v, g["measured"])))
    rows.append(("  kept (status ok)", pct(g["kept"], g["measured"])))
    rows.append(("  device", f"{g['gpu']} (driver {g['driver'] or '?'}, torch {g['torch']}, CUDA {g['cuda'] or '-'})"))
    rows.append(("eager runtime (ms, measured, kept)", ""))
    rows += [(f"  {b}", pct(c, g["kept"])) for b, c in g["eager_runtime_ms"].items()]
    rows.append(("torch.compile speedup (eager / compiled, kept)", ""))
    rows += [(f"  {b}", pct(c, g["kept"])) for b, c in g["compile_speedup"].items()]
    s = g["compile_speedup_stats"]
    if s:
        rows.append(("  median / geomean / p10 / p90", f"{s['median']:.2f} / {s['geomean']:.2f} / {s['p10']:.2f} / {s['p90']:.2f}"))
    e = g.get("eager_over_estimate")
    if e:
        rows.append(("measured eager / estimated (all)", f"median {e['median']:.2f}, p10 {e['p10']:.2f}, p90 {e['p90']:.2f}"))
    rows.append(("  serial GPU wall / cold compile (s)", f"{g['seconds']['serial_wall_s']} / {g['seconds']['compile_cold_s']}"))
    ph = g["seconds"].get("phase_s")
    if ph:
        rows.append(("  serial wall by phase (s)", ", ".join(f"{k} {v}" for k, v in ph.items())))
    for key, title in (("kept_ops_per_task", "operators per task (kept)"), ("kept_splits", "splits (kept)"),
                       ("kept_dtypes", "dtypes (kept)"), ("kept_families", "first-operator families (kept)")):
        if g.get(key):
            rows.append((title, ""))
            rows += [(f"  {b}", pct(c, g["kept"])) for b, c in g[key].items()]
    return "".join(f"{a:<38s}{b}\n" if b else f"{a}\n" for a, b in rows)


def write_results(out_path, g, by_id, dataset):
    """The run in the format of tools/bench/results/ (ARCHITECTURE.md, "Tests and benchmarks")."""
    kept = sorted(r["eager_ms"] for r in by_id.values() if r["status"] == "ok")
    figures = {"tasks_count": g["tasks"], "tasks_measured_count": g["measured"], "tasks_kept_count": g["kept"],
               "tasks_pending_count": g["pending"]}
    for k, v in g["rejected"].items():
        figures[f"rejected_{k}_count"] = v
    if kept:
        figures["eager_ms_p50"] = percentile(kept, 0.5)
    for split, c in g.get("kept_splits", {}).items():
        figures[f"tasks_kept_{split}_count"] = c
    s = g["compile_speedup_stats"]
    if s:
        figures["compile_speedup_median_ratio"] = s["median"]
        figures["compile_speedup_geomean_ratio"] = s["geomean"]
        figures["compile_faster_share_pct"] = 100 * s["compile_faster_share"]
    figures["serial_wall_s_total"] = g["seconds"]["serial_wall_s"]
    figures["compile_cold_s_total"] = g["seconds"]["compile_cold_s"]
    if g["measured"]:
        figures["serial_wall_s_per_task"] = g["seconds"]["serial_wall_s"] / g["measured"]
        figures["compile_cold_s_per_task"] = g["seconds"]["compile_cold_s"] / g["measured"]
    doc = {"gpu": g["gpu"], "driver": g["driver"], "cuda": g["cuda"], "torch": g["torch"],
           "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "commit": results_doc.commit(),
           "command": f"python3 tools/dataset/synth_gpu.py {dataset} --shard ...; python3 tools/dataset/synth_gpu.py --merge {dataset}",
           "figures": figures}
    results_doc.write(out_path, doc, "synth_gpu")



def baseline_of(r):
    """The row's baseline_json object: the environment, the method and the statistics."""
    env = r.get("env", {})
    short = ("median_ms", "p10_ms", "p90_ms", "n", "rse")
    b = {"gpu": env.get("gpu", ""), "driver": env.get("driver", ""), "torch": env.get("torch", ""),
         "cuda": env.get("cuda", ""), "cudnn": env.get("cudnn"), "triton": env.get("triton"),
         "method": r.get("method", ""), "flags": r.get("flags", {}),
         "status": r["status"], "dims": r.get("dims"), "date": r.get("date"), "tool": r.get("tool"),
         "eager": {k: r["eager"][k] for k in short if k in r["eager"]} if r.get("eager") else None,
         "compile": {k: r["compile"][k] for k in short if k in r["compile"]} if r.get("compile") else None,
         "probe_eager_ms": r.get("probe_eager_ms"), "compile_cold_s": r.get("compile_cold_s"),
         "compile_warm_s": r.get("compile_warm_s"), "peak_mem_gb": r.get("peak_mem_gb"), "error": r.get("error")}
    return {k: v for k, v in b.items() if v is not None}


def spec_baselines_of(r):
    """The `baselines:` block of an ok row's spec, the keys data_synth/task/task_spec.cpp parses (kforge
    writes it, six significant digits)."""
    env = r.get("env", {})
    b = {"eager_ms": r["eager_ms"], "gpu": env.get("gpu", ""), "torch": env.get("torch", ""),
         "cuda": env.get("cuda", ""), "method": r.get("method", ""), "flags": r.get("flags") or {}}
    if r.get("compile_ms"):
        b["compile_ms"] = r["compile_ms"]
    return b


def finite_or_none(x):
    return x if x is not None and math.isfinite(x) else None


def cmd_merge(a):
    path = a.dataset
    out_dir = a.out or os.path.join(os.path.dirname(os.path.abspath(path)), "gpu")
    settings, tasks = export_tasks(path, "all/1")  # validates the file (one error line otherwise)
    if not os.path.isdir(out_dir) or not part_files(out_dir):
        raise InputError(f"{out_dir}: no part-*.jsonl files to merge (run the GPU stage first)")
    all_recs = read_records(out_dir)
    by_id = pick_records(all_recs)
    cpu = [r["id"] for r in by_id.values() if not str(r.get("env", {}).get("device", "")).startswith("cuda")]
    if cpu and not a.allow_cpu:
        raise InputError(f"{out_dir}: {len(cpu)} record(s) were measured with --device cpu (e.g. {cpu[0]}); they are "
                         f"not GPU baselines (pass --allow-cpu to merge them anyway, for tests)")
    ids = [t["id"] for t in tasks]
    n = len(ids)
    # Only records of these tasks (same id and graph hash: not another dataset's that shares an id).
    hash_of = {t["id"]: t["graph_hash"] for t in tasks}
    fits = [r.get("graph_hash") in (None, hash_of.get(r["id"])) for r in all_recs]
    stale = sum(1 for r, ok in zip(all_recs, fits) if not ok and r["id"] in hash_of)
    by_id = pick_records([r for r, ok in zip(all_recs, fits) if ok])
    lines = []
    for tid in ids:
        r = by_id.get(tid)
        if r is None:
            continue
        line = {"kind": "row", "id": tid, "graph_hash": hash_of[tid], "status": r["status"],
                "eager_ms": finite_or_none(r.get("eager_ms")), "compile_ms": finite_or_none(r.get("compile_ms")),
                "baseline": baseline_of(r)}
        if r["status"] == "ok":
            line["baselines"] = spec_baselines_of(r)
        lines.append(line)
    updated = len(lines)
    meta = {t["id"]: {k: t[k] for k in ("n_ops", "split", "dtype", "family")} for t in tasks}
    g = gpu_summary(ids, by_id, n, meta)
    try:
        summary = json.loads(settings.get("summary_json") or "{}")
    except ValueError:
        summary = {}
    summary["gpu"] = g
    stages = "eager_runtime_window, torch_compile_build, baselines"
    gpu_stages = (f"done: {stages} ({g['kept']} ok, {g['measured'] - g['kept']} rejected; {g['gpu']})"
                  if g["pending"] == 0 else
                  f"partial: {stages} ({g['measured']} of {n} measured, {g['pending']} pending)")
    lines.append({"kind": "attrs", "attrs": {"summary_json": json.dumps(summary), "gpu_stages": gpu_stages}})
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", prefix="synth_gpu_merge_", delete=False) as f:
        for line in lines:
            f.write(json.dumps(line, allow_nan=False) + "\n")
    try:
        run_kforge("tasks", "set-baselines", path, "--from", f.name)  # a new file moved into place
    finally:
        os.unlink(f.name)

    d = os.path.dirname(os.path.abspath(path))
    sj = os.path.join(d, "summary.json")
    try:
        with open(sj) as f:
            file_summary = json.load(f)
    except (OSError, ValueError):
        file_summary = {k: v for k, v in summary.items() if k != "gpu"}
    file_summary["gpu"] = g
    with open(sj, "w") as f:
        json.dump(file_summary, f, indent=2)
        f.write("\n")
    table = summary_table(g)
    st = os.path.join(d, "summary.txt")
    old = open(st).read() if os.path.exists(st) else ""
    for marker in ("GPU stage (tools/dataset/synth_gpu.py)", "GPU stage (tools/synth_gpu.py)"):  # and as written before the move
        if marker in old:
            old = old[:old.index(marker)]
    with open(st, "w") as f:
        f.write(old + table)
    print(table, end="")
    print(f"synth_gpu: merged {updated} record(s) into {path} ({g['kept']} ok, {g['measured'] - g['kept']} rejected, "
          f"{g['pending']} pending); wrote summary.json, summary.txt"
          + (f"; ignored {stale} record(s) of another task with the same id" if stale else ""), flush=True)
    if a.results:
        write_results(a.results, g, by_id, path)
    plots = os.path.join(ROOT, "tools", "dataset", "synth_plots.py")
    if os.path.exists(plots) and not a.no_plots:
        r = subprocess.run([sys.executable, plots, sj], capture_output=True, text=True)
        print((r.stdout or r.stderr).strip(), flush=True)
    return 0




def cmd_compare(a):
    """Two runs over the same rows (e.g. --no-overlap against overlap, or an old calibration against a
    new one): statuses, the ratio of the medians task by task, the noise, the serial seconds."""
    new_dir = a.out or os.path.join(os.path.dirname(os.path.abspath(a.dataset)), "gpu")
    for d in (a.compare, new_dir):
        if not os.path.isdir(d) or not part_files(d):
            raise InputError(f"{d}: no part-*.jsonl files to compare")
    ref, new = pick_records(read_records(a.compare)), pick_records(read_records(new_dir))
    both = sorted(i for i in ref if i in new and ref[i].get("graph_hash") == new[i].get("graph_hash"))
    print(f"synth_gpu: compare {new_dir} (new) with {a.compare} (reference): {len(both)} task(s) in both "
          f"({len(new)} new, {len(ref)} reference)")
    if not both:
        return 0
    differ = [i for i in both if ref[i]["status"] != new[i]["status"]]
    print(f"  statuses: {len(both) - len(differ)} of {len(both)} agree"
          + "".join(f"\n    {i}: {ref[i]['status']} -> {new[i]['status']}" for i in differ[:10])
          + (f"\n    ... {len(differ) - 10} more" if len(differ) > 10 else ""))

    def q(xs):
        if not xs:
            return "-"
        gm = math.exp(sum(math.log(x) for x in xs) / len(xs)) if all(x > 0 for x in xs) else float("nan")
        return (f"median {percentile(xs, 0.5):.4g}, p10 {percentile(xs, 0.1):.4g}, p90 {percentile(xs, 0.9):.4g}, "
                f"geomean {gm:.4g} (n {len(xs)})")
    ok = [i for i in both if ref[i]["status"] == new[i]["status"] == "ok"]
    for key in ("eager_ms", "compile_ms"):
        rs = [new[i][key] / ref[i][key] for i in ok if new[i].get(key) and ref[i].get(key)]
        print(f"  {key} new / reference (ok in both): {q(rs)}")
    for key in ("eager", "compile"):
        for name, recs in (("reference", ref), ("new", new)):
            xs = [recs[i][key]["rse"] for i in ok if (recs[i].get(key) or {}).get("rse") is not None]
            ns = [recs[i][key]["n"] for i in ok if (recs[i].get(key) or {}).get("n")]
            if xs:
                print(f"  {key} noise, {name}: RSE median {percentile(xs, 0.5):.4f}, p90 {percentile(xs, 0.9):.4f}; "
                      f"n median {percentile(ns, 0.5)}")
    for name, recs in (("reference", ref), ("new", new)):
        w = [recs[i].get("wall_s") or 0.0 for i in both]
        wok = [recs[i].get("wall_s") or 0.0 for i in ok]
        line = (f"  wall_s, {name}: sum {sum(w):.1f} over {len(w)}; ok tasks median {percentile(wok, 0.5) if wok else 0:.3f}, "
                f"sum {sum(wok):.1f}")
        ph = [recs[i]["phase_s"] for i in ok if recs[i].get("phase_s")]
        if ph:
            keys = [k for k in PHASES + ("other",) if any(k in p for p in ph)]
            line += "; per ok task, median: " + ", ".join(f"{k} {percentile([p.get(k, 0.0) for p in ph], 0.5):.3f}"
                                                            for k in keys)
        print(line)
    return 0


