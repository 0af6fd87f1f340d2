"""report.md: the report's numbers as Markdown tables, the plots linked beside them. Every text
that comes from the rows or the command line (run, model, task and GPU names, versions, reasons,
paths) goes through esc(): a name cannot start a heading, a link, an image, HTML or a table cell."""
import collections
import re

from . import metrics as M
from .kernelbench import kernelbench_table

# Markdown's markup characters; an underscore only at a word's edge (inside a name it emphasises
# nothing, and task names are full of them).
MARKUP = re.compile(r"[\\`*\[\]<>|#!~]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")


def esc(x) -> str:
    """Text as literal Markdown on one line: whitespace runs (newlines too) become one space, markup
    characters are backslash-escaped."""
    return MARKUP.sub(lambda m: "\\" + m.group(0), " ".join(str(x).split()))


TITLES = {
    "pass_rate": "pass rate (correct final submission)",
    "general_rate": "generalises to other shapes (of the correct ones on tasks with other shapes)",
    "faster_than_eager_rate": "faster than eager",
    "faster_than_compile_rate": "faster than torch.compile",
    "cheat_rate": "refused as a cheat",
    "geomean_speedup_eager": "geomean speedup over eager (failed = 1x)",
    "geomean_speedup_eager_last": "geomean speedup over eager of the last version (where the reward is the best version's)",
    "geomean_speedup_compile": "geomean speedup over torch.compile (failed = 1x)",
    "geomean_speedup_eager_correct": "geomean speedup over eager, correct only",
    "geomean_speedup_compile_correct": "geomean speedup over torch.compile, correct only",
}
GROUP_TITLES = {"level_or_ops": "KernelBench level or operator count", "dtype": "dtype", "split": "split",
                "source": "source"}
GROUP_COLUMNS = ("pass_rate", "general_rate", "faster_than_eager_rate", "faster_than_compile_rate", "fast_1",
                 "geomean_speedup_eager", "geomean_speedup_compile")


def _fmt(v, geo):
    if v is None:
        return "–"
    return f"{v:.3f}x" if geo else f"{100 * v:.1f} %"


def _cell(m, name, with_ci=True):
    geo = name in M.GEOMEANS
    s = _fmt(m["value"], geo)
    if with_ci and m["value"] is not None and m["lo"] is not None:
        s += f" [{_fmt(m['lo'], geo)}, {_fmt(m['hi'], geo)}]"
    return s


def _environment(env):
    lines = ["### Where and how it was judged", ""]
    if env["devices"]:
        for d in env["devices"]:
            lines.append(f"- GPU: {esc(d['gpu'])} (driver API {esc(d['driver'])}, CUDA {esc(d['cuda'])}, "
                         f"torch {esc(d['torch'])}), "
                         f"{d['episodes']} episode(s) judged there")
    else:
        lines.append("- GPU: none recorded (no submission reached the GPU worker; the server's GPUs: "
                     f"{', '.join(map(esc, env['server_gpus'])) or 'none'})")
    if env["devices"] and env["server_gpus"]:
        lines.append(f"- the server's GPU lanes: {', '.join(map(esc, env['server_gpus']))}")
    if env["kforge_versions"]:
        lines.append(f"- kforge server version: {', '.join(map(esc, env['kforge_versions']))}")
    for m in env["timing_methods"] or [{"method": "not recorded (nothing was timed)", "episodes": 0}]:
        lines.append(f"- timing method: {esc(m['method'])}")
    prof = env["tolerance_profile"]
    lines.append(f"- tolerance profile: {esc(prof) if prof else 'not recorded'} "
                 f"(check |c - r| <= atol + rtol·|r|; configs/eval.yaml precision.profiles)")
    for t in env["tolerances"]:
        lines.append(f"  - {esc(t['dtype'])}: atol {t['atol']:g}, rtol {t['rtol']:g} ({t['episodes']} episode(s))")
    for b in env["compile_baselines"]:
        lines.append(f"- torch.compile baseline: measured on {esc(b['stored_gpu'] or 'an unrecorded GPU')}; "
                     f"{esc(b['rescale'])}")
    lines += _left_out(env.get("left_out"))
    return lines + [""]


STAGES = {"import": "not imported", "gpu_stage": "rejected by the GPU stage",
          "input_checks": "refused by the input checks (an argument, row or channel that does not matter)",
          "not_measured": "not measured on a GPU"}


def _left_out(left_out):
    """The tasks of the evaluated sources that the server held but did not serve: kforge's metrics
    leave them out; KernelBench's table (kernelbench.py) counts them per level as not solved."""
    if left_out is None:
        return []
    if not left_out:
        return ["- tasks of these sources the server left out: none"]
    lines = ["- tasks of these sources the server left out (kforge's metrics leave them out; KernelBench's table per "
             "level, where there is one, counts them as not solved):"]
    by_source = {}
    for x in left_out:
        by_source.setdefault(x["source"], {}).setdefault(x["stage"], []).append(x)
    for source, stages in sorted(by_source.items()):
        parts = []
        for stage, xs in stages.items():
            by_reason = collections.Counter()  # one count per reason, whatever the levels it spans
            for x in xs:
                if x["reason"]:
                    by_reason[x["reason"]] += x["rows"]
            reasons = ", ".join(f"{esc(r)} {n}" for r, n in sorted(by_reason.items()))
            parts.append(f"{sum(x['rows'] for x in xs)} {STAGES.get(stage, esc(stage))}" +
                         (f" ({reasons})" if reasons else ""))
        lines.append(f"  - {esc(source)}: " + "; ".join(parts))
    return lines


def _run(rep, bootstrap):
    lines = [f"## Run {esc(rep['name'])}", "",
             f"Model(s): {', '.join(map(esc, rep['models'])) or '–'}. Episodes played: {rep['episodes']} over {rep['tasks']} "
             f"task(s); judged: {rep['judged']}; played with no GPU lane (not judged): {rep['unjudged']}; "
             f"could not be played (endpoint or server errors): {rep['errors']}.", ""]
    if rep["unjudged"] and not rep["judged"]:
        lines += ["**NOTHING COULD BE JUDGED**: every episode was played on a server with no GPU lane "
                  "(kforge-evaluate --allow-no-gpu); the metrics below are undefined.", ""]
    if rep["verdicts"]:
        lines += ["Final verdicts: " + ", ".join(f"{esc(k)} {v}" for k, v in rep["verdicts"].items()) + ".", ""]
    lines += _environment(rep["environment"])
    o = rep["overall"]
    lines += [f"### Metrics ({o['episodes']} judged episodes, {o['tasks']} tasks; "
              f"{int(100 * bootstrap['confidence'])} % intervals)", "",
              "| metric | value | interval | n |", "| --- | --- | --- | --- |"]
    for name in M.metric_names():
        m = o["metrics"][name]
        title = TITLES.get(name, name + " (correct and speedup over eager > p)" if name.startswith("fast_") else name)
        if name == "fast_0":
            title = "fast_0 (correct: the correctness rate)"
        ci = f"[{_fmt(m['lo'], name in M.GEOMEANS)}, {_fmt(m['hi'], name in M.GEOMEANS)}]" if m["lo"] is not None else "–"
        lines.append(f"| {title} | {_fmt(m['value'], name in M.GEOMEANS)} | {ci} | {m['n']} |")
    lines.append("")
    lines += kernelbench_table(rep.get("kernelbench"), esc)
    for grouping, groups in rep["groups"].items():
        if not groups:
            continue
        lines += [f"### By {GROUP_TITLES[grouping]}", "",
                  "| group | episodes | tasks | " + " | ".join(GROUP_COLUMNS) + " |",
                  "| --- | --- | --- | " + " | ".join("---" for _ in GROUP_COLUMNS) + " |"]
        for g, res in groups.items():
            cells = [_cell(res["metrics"][c], c) for c in GROUP_COLUMNS]
            lines.append(f"| {esc(g)} | {res['episodes']} | {res['tasks']} | " + " | ".join(cells) + " |")
        lines.append("")
    plots = rep.get("plots") or {}
    if plots:
        lines += [f"![fast_p]({plots['fast_p']}) ![speedups]({plots['speedups']})", ""]
    return lines


def _comparison(c):
    lines = [f"## {esc(c['b'])} against {esc(c['a'])}", "",
             f"{c['pairs']} episode(s) judged in both, matched by task and seed, over {c['tasks']} task(s) "
             f"(only in {esc(c['a'])}: {c['only_in_a']}; only in {esc(c['b'])}: {c['only_in_b']}).", ""]
    if c["metrics"]:
        lines += ["| metric | A | B | B - A [interval] | B / A [interval] |", "| --- | --- | --- | --- | --- |"]
        for name, m in c["metrics"].items():
            geo = name in M.GEOMEANS
            d = "–" if m["diff"] is None else (f"{m['diff']:+.3f}" if geo else f"{100 * m['diff']:+.1f} pts")
            if m["diff_lo"] is not None:
                d += (f" [{m['diff_lo']:+.3f}, {m['diff_hi']:+.3f}]" if geo else
                      f" [{100 * m['diff_lo']:+.1f}, {100 * m['diff_hi']:+.1f}]")
            r = "–"
            if m.get("ratio") is not None:
                r = f"{m['ratio']:.3f}" + (f" [{m['ratio_lo']:.3f}, {m['ratio_hi']:.3f}]" if m.get("ratio_lo") is not None else "")
            lines.append(f"| {name} | {_fmt(m['a'], geo)} | {_fmt(m['b'], geo)} | {d} | {r} |")
        lines.append("")
    for key, title in (("pass_to_fail", "pass -> fail"), ("fail_to_pass", "fail -> pass"),
                       ("crossed_1x_up", "crossed 1x upwards (fast_1 in B only)"),
                       ("crossed_1x_down", "crossed 1x downwards (fast_1 in A only)")):
        items = c["flipped"][key]
        lines.append(f"- {title}: {len(items)}" + (": " + ", ".join(
            f"{esc(i['task'])} (seed {esc(i['seed'])}: {_sp(i['a'], i['a_verdict'])} -> {_sp(i['b'], i['b_verdict'])})"
            for i in items) if items else ""))
    if c.get("plot"):
        lines += ["", f"![comparison]({c['plot']})"]
    return lines + [""]


def _sp(s, verdict):
    return f"{s:.2f}x" if s is not None else esc(verdict or "no submission")


def _unread(doc):
    """The input lines no metric counts because they are not episode rows."""
    lines = []
    for u in doc.get("unread_lines") or []:
        first = "; ".join(f"line {x['line']}: {esc(x['why'])}" for x in u["first"])
        lines += [f"**{u['lines']} line(s) of {esc(u['file'])} not read as episodes** (counted by no metric): "
                  f"{first}{', ...' if u['lines'] > len(u['first']) else ''}.", ""]
    return lines


def render(doc) -> str:
    b = doc["bootstrap"]
    lines = ["# kforge evaluation report", "",
             "Inputs: " + ", ".join(esc(p) for p in doc.get("inputs", [])) + ".", ""] + _unread(doc) + [
             f"Intervals: {b['method']}, B = {b['resamples']} resamples, seed {b['seed']}, "
             f"{int(100 * b['confidence'])} % percentile intervals. Definitions: tools/python/README.md, Report. "
             "Failed episodes enter the all-episode geometric means as speedup 1x; the 'correct only' "
             "means (KernelBench's convention) leave them out.", ""]
    for rep in doc["runs"]:
        lines += _run(rep, b)
    for c in doc["comparisons"]:
        lines += _comparison(c)
    return "\n".join(lines).rstrip() + "\n"
