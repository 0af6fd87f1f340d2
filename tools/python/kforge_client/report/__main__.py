"""kforge report RESULTS.jsonl [B.jsonl ...] --out DIR: the report of finished kforge-evaluate runs."""
import argparse
import sys

from . import metrics as M

PROG = "kforge report"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog=PROG, description="The checkpoint evaluation report of kforge-evaluate's JSONL "
                                 "results (report.md, report.json, PNG plots); with two or more files, each later run "
                                 "is compared with the first, episode by episode (task and seed).")
    ap.add_argument("results", nargs="+", help="kforge-evaluate --out files; one run per file and model")
    ap.add_argument("--out", required=True, help="the report folder (made if missing)")
    ap.add_argument("--model", default=None, help="only this model's rows of each file")
    ap.add_argument("--resamples", type=int, default=M.DEFAULT_B,
                    help=f"bootstrap resamples over tasks (default {M.DEFAULT_B}; 0: no intervals)")
    ap.add_argument("--seed", type=int, default=M.DEFAULT_SEED, help=f"the bootstrap's seed (default {M.DEFAULT_SEED})")
    ap.add_argument("--eval-config", default=None,
                    help="the eval.yaml whose precision profiles the tolerances are matched against (default configs/eval.yaml)")
    a = ap.parse_args(argv)
    if a.resamples < 0:
        ap.error("--resamples must be >= 0")
    from .build import write_report
    try:
        doc = write_report(a.results, a.out, model=a.model, resamples=a.resamples, seed=a.seed, eval_yaml=a.eval_config)
    except OSError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2
    for u in doc["unread_lines"]:
        first = "; ".join(f"line {x['line']}: {x['why']}" for x in u["first"])
        print(f"{PROG}: {u['file']}: {u['lines']} line(s) not read as episodes, counted by no metric ({first}"
              f"{', ...' if u['lines'] > len(u['first']) else ''})", file=sys.stderr)
    for rep in doc["runs"]:
        m = rep["overall"]["metrics"]
        pr = m["pass_rate"]["value"]
        print(f"{PROG}: {rep['name']}: {rep['judged']} judged of {rep['episodes']} episode(s)"
              + (f", pass rate {100 * pr:.1f} %, fast_1 {100 * m['fast_1']['value']:.1f} %" if pr is not None else
                 (", NOTHING COULD BE JUDGED (no GPU lane)" if rep["unjudged"] else "")))
    print(f"{PROG}: wrote {a.out}/report.md, report.json and the plots")
    return 0


if __name__ == "__main__":
    sys.exit(main())
