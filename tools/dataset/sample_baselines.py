#!/usr/bin/env python3
"""Eager and torch.compile baselines for the hand-written sample tasks (datasets/samples/*.yaml),
measured by the dataset's own tool and method (tools/dataset/synth_gpu.py), so that the reward's top tier
(faster than torch.compile) can be reached on them too.

    tools/dataset/sample_baselines.py pack OUT_DIR [--samples DIR] [--kforge BIN]
        OUT_DIR/dataset.h5, written by `kforge tasks pack`: one row per sample (its spec as
        written, its program as `kforge task render` prints it, the derived columns as `kforge
        synth` fills them), in the dataset layout (data_synth/dataset/DATASET_FORMAT.md), ready for
        `tools/dataset/synth_gpu.py OUT_DIR/dataset.h5` and `--merge` on the GPU host
    tools/dataset/sample_baselines.py apply MERGED_DATASET [--samples DIR] [--kforge BIN]
        writes each measured sample's `baselines:` block (eager_ms, compile_ms, GPU, torch, CUDA,
        method, flags) into its YAML, every other line left as it is; a sample the GPU stage
        rejected is named with its reason and left alone; each changed file is checked with
        `kforge task fmt`

The whole round on a GPU host: `bash tools/bench/run_pending_gpu.sh OUT sample_baselines`, then
here `tools/dataset/sample_baselines.py apply OUT/samples/dataset.h5`.
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools", "dataset"))


def fail(msg):
    print(f"sample_baselines: {msg}", file=sys.stderr)
    return 2


def samples_in(d):
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".yaml"))


def kforge_out(kforge, *args):
    r = subprocess.run([kforge, *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"kforge {' '.join(args)}: {(r.stderr.strip().splitlines() or ['failed'])[-1]}")
    return r.stdout


def cmd_pack(a):
    files = samples_in(a.samples)
    if not files:
        return fail(f"{a.samples}: no *.yaml sample tasks")
    os.makedirs(a.out_dir, exist_ok=True)
    out = os.path.join(a.out_dir, "dataset.h5")
    # kforge writes the dataset: every column from the spec as it parses it, the spec as written. The
    # generator is an identity, kept as it was before tools/dataset/ (tools/dataset/README.md).
    try:
        kforge_out(a.kforge, "tasks", "pack", out, *files, "--generator", "tools/sample_baselines.py 2")
    except RuntimeError as e:
        return fail(str(e))
    print(f"sample_baselines: wrote {out} ({len(files)} sample tasks)")
    return 0


def cmd_apply(a):
    import tempfile
    import yaml
    from synth_gpu import InputError, run_kforge
    os.environ.setdefault("KFORGE_BIN", a.kforge)
    with tempfile.TemporaryDirectory(prefix="sample_baselines_") as d:
        rows_file = os.path.join(d, "rows.jsonl")
        try:  # kforge reads the dataset
            run_kforge("tasks", "export", a.dataset, "--status", "all", "--format", "jsonl", "--out", rows_file)
        except InputError as e:
            return fail(str(e))
        with open(rows_file) as f:
            by_id = {r["id"]: r for r in map(json.loads, f)}
        changed, skipped = 0, []
        for path in samples_in(a.samples):
            text = open(path).read()
            sid = (yaml.safe_load(text) or {}).get("id", os.path.splitext(os.path.basename(path))[0])
            r = by_id.get(sid)
            if r is None:
                skipped.append(f"{sid}: not in {a.dataset}")
                continue
            if r["status"] != "ok":
                skipped.append(f"{sid}: {r['status']}")
                continue
            b = r.get("baseline") or {}
            if (b.get("dims") == "check" or str(b.get("gpu", "")).startswith("none")) and not a.allow_cpu:
                skipped.append(f"{sid}: measured on the CPU (--allow-cpu to write it anyway)")
                continue
            rec = {"eager_ms": r["eager_ms"], "gpu": b.get("gpu", ""), "torch": b.get("torch", ""),
                   "cuda": b.get("cuda", ""), "method": b.get("method", ""), "flags": b.get("flags", {})}
            if r.get("compile_ms"):
                rec["compile_ms"] = r["compile_ms"]
            src = os.path.join(d, sid + ".json")
            with open(src, "w") as f:
                json.dump(rec, f)
            try:  # kforge writes the block (every other line kept) and checks that the task still parses
                out = run_kforge("task", "set-baselines", path, "--from", src)
            except InputError as e:
                return fail(f"{path}: the spec with its baselines does not parse ({e}); left as it was")
            changed += "unchanged" not in out
            print(f"sample_baselines: {sid}: eager {r['eager_ms']:.3f} ms, torch.compile {r['compile_ms']:.3f} ms")
    for s_ in skipped:
        print(f"sample_baselines: left alone: {s_}")
    print(f"sample_baselines: {changed} sample(s) updated, {len(skipped)} left alone")
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("pack")
    p.add_argument("out_dir")
    q = sub.add_parser("apply")
    q.add_argument("dataset")
    q.add_argument("--allow-cpu", action="store_true", help="write baselines measured in synth_gpu's CPU mode (tests)")
    for x in (p, q):
        x.add_argument("--samples", default=os.path.join(ROOT, "datasets", "samples"))
        x.add_argument("--kforge", default=os.environ.get("KFORGE", os.path.join(ROOT, "build", "tools", "kforge")))
    a = ap.parse_args(argv)
    if not os.path.isdir(a.samples):
        return fail(f"{a.samples}: not a folder of sample tasks")
    return cmd_pack(a) if a.cmd == "pack" else cmd_apply(a)


if __name__ == "__main__":
    sys.exit(main())
