"""The import table of KernelBench (issue 29): `kforge tasks import --format kernelbench` over a
KernelBench checkout's levels 1-4, as a new user runs it, timed; imported and skipped by reason, per
level, and the wall time, as a results record (tools/bench/results_doc.py).

    tools/bench/kernelbench_import.py --kernelbench PATH/KernelBench --out DIR [--record FILE]
        [--kforge build/tools/kforge] [-- EXTRA kforge tasks import OPTIONS]

PATH/KernelBench is the folder that holds level1/ ... level4/ (KernelBench's files are never
committed here: fetch the benchmark onto the machine and give its path). DIR receives the import
(tasks/, skipped.jsonl, dataset.h5). The record's figures: modules, imported and skipped per reason
(the importer's and the pack's: spec_error, input_matters, reference_failed), the share of levels
1-3 imported, per level, the wall time of the whole command and the importer's own seconds."""
import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import results_doc  # noqa: E402

LEVELS = ("level1", "level2", "level3", "level4")
PACK_REASONS = ("spec_error", "input_matters", "reference_failed")  # kforge's own, after the importer


def level_of(path):
    m = re.search(r"(?:^|/)level(\d)/", path)
    return int(m.group(1)) if m else None


def table(out, kb):
    """The figures and details of an import in `out` of the modules under `kb`."""
    modules = {lv: sorted(f for f in os.listdir(os.path.join(kb, lv)) if f.endswith(".py"))
               for lv in LEVELS if os.path.isdir(os.path.join(kb, lv))}
    skipped = [json.loads(line) for line in open(os.path.join(out, "skipped.jsonl")) if line.strip()]
    imported = [json.loads(line) for line in open(os.path.join(out, "imported.jsonl")) if line.strip()]
    # a task the pack refused is in skipped.jsonl under its module's file (before 3d907c7, its task
    # file DIR/tasks/<id>.yaml): its module is not imported
    pack = [s for s in skipped if s["reason"] in PACK_REASONS]
    refused = {os.path.basename(s["file"])[:-5] for s in pack if s["file"].endswith(".yaml")}
    packed_out = {i["file"] for i in imported if i["id"] in refused} | {s["file"] for s in pack if not s["file"].endswith(".yaml")}
    figures = {"modules_count": sum(len(v) for v in modules.values())}
    by_reason = {}
    for s in skipped:
        by_reason[s["reason"]] = by_reason.get(s["reason"], 0) + 1
    kept = [i for i in imported if i["file"] not in packed_out]
    figures["imported_count"] = len(kept)
    for lv, files in modules.items():
        n = int(lv[-1])
        figures[f"level{n}_modules_count"] = len(files)
        figures[f"level{n}_imported_count"] = sum(1 for i in kept if level_of(i["file"]) == n)
    l13 = sum(len(modules.get(lv, [])) for lv in LEVELS[:3])
    figures["levels_1_3_imported_pct"] = round(100.0 * sum(figures.get(f"level{n}_imported_count", 0) for n in (1, 2, 3))
                                               / l13, 2) if l13 else 0.0
    for reason, n in sorted(by_reason.items()):
        figures[f"skipped_{reason}_count"] = n
    slow = sorted(imported, key=lambda i: -i["seconds"])[:10]
    details = {"skipped": [{"file": os.path.relpath(s["file"], kb) if s["file"].startswith(kb) else s["file"],
                            "reason": s["reason"], "detail": s["detail"][:300]} for s in skipped],
               "slowest_imports_s": {os.path.relpath(i["file"], kb): i["seconds"] for i in slow},
               "tiers": tiers(imported)}
    return figures, details


def tiers(imported):
    """How many tasks were checked at their own size, and at a small size per tier (sizing.py): the row's
    `trace_tier` (module, A, B, A1, M), else read from its notes (rows written before trace_tier)."""
    out = {}
    for i in imported:
        tier = i.get("trace_tier")
        if tier:
            key = "own_size" if tier == "module" else f"tier_{tier}"
        else:
            m = next((re.search(r"tier (\w+)", n) for n in i["notes"] if n.startswith("checked and traced at a small size")), None)
            key = f"tier_{m.group(1)}" if m else "own_size"
        out[key] = out.get(key, 0) + 1
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kernelbench", required=True, help="the KernelBench folder that holds level1/ ... level4/")
    p.add_argument("--out", required=True, help="the import's output folder")
    p.add_argument("--record", help="the results record to write (tools/bench/results/...json)")
    p.add_argument("--kforge", default=os.path.join(ROOT, "build", "tools", "kforge"))
    p.add_argument("extra", nargs="*", help="more options of kforge tasks import (after --)")
    a = p.parse_args(argv)
    kb = os.path.abspath(a.kernelbench)
    paths = [os.path.join(kb, lv) for lv in LEVELS if os.path.isdir(os.path.join(kb, lv))]
    if not paths:
        p.error(f"{kb} holds none of {', '.join(LEVELS)}")
    cmd = [a.kforge, "tasks", "import", "--format", "kernelbench", "--out", a.out, *a.extra, *paths]
    t0 = time.monotonic()
    rc = subprocess.run(cmd).returncode
    wall = time.monotonic() - t0
    if rc != 0:
        print(f"kernelbench_import: {' '.join(cmd)} exited {rc}", file=sys.stderr)
        return rc
    figures, details = table(a.out, kb)
    summary = json.load(open(os.path.join(a.out, "import_summary.json")))
    figures["wall_s"] = round(wall, 1)
    figures["importer_s"] = round(summary["seconds"], 1)
    print(json.dumps(figures, indent=1))
    if a.record:
        import torch
        doc = {"gpu": "none (CPU only)", "driver": None, "cuda": torch.version.cuda, "torch": torch.__version__,
               "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
               "commit": results_doc.commit(), "command": " ".join(["tools/bench/kernelbench_import.py", *(argv or sys.argv[1:])]),
               "host_cpus": os.cpu_count(), "host_memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
               "host": platform.machine(), "figures": figures, "details": details}
        results_doc.write(a.record, doc, "kernelbench_import")
    return 0


if __name__ == "__main__":
    sys.exit(main())
