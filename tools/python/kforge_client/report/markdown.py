"""report.md: the report's numbers as Markdown tables, the plots linked beside them."""
from . import metrics as M

TITLES = {
    "pass_rate": "pass rate (correct final submission)",
    "faster_than_eager_rate": "faster than eager",
    "faster_than_compile_rate": "faster than torch.compile",
    "cheat_rate": "refused as a cheat",
    "geomean_speedup_eager": "geomean speedup over eager (failed = 1x)",
    "geomean_speedup_compile": "geomean speedup over torch.compile (failed = 1x)",
    "geomean_speedup_eager_correct": "geomean speedup over eager, correct only",
    "geomean_speedup_compile_correct": "geomean speedup over torch.compile, correct only",
}
GROUP_TITLES = {"level_or_ops": "KernelBench level or operator count", "dtype": "dtype", "split": "split",
                "source": "source"}
GROUP_COLUMNS = ("pass_rate", "faster_than_eager_rate", "faster_than_compile_rate", "fast_1",
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
            lines.append(f"- GPU: {d['gpu']} (driver API {d['driver']}, CUDA {d['cuda']}, torch {d['torch']}), "
                         f"{d['episodes']} episode(s) judged there")
    else:
        lines.append("- GPU: none recorded (no submission reached the GPU worker; the server's GPUs: "
                     f"{', '.join(env['server_gpus']) or 'none'})")
    if env["devices"] and env["server_gpus"]:
        lines.append(f"- the server's GPU lanes: {', '.join(env['server_gpus'])}")
    if env["kforge_versions"]:
        lines.append(f"- kforge server version: {', '.join(env['kforge_versions'])}")
    for m in env["timing_methods"] or [{"method": "not recorded (nothing was timed)", "episodes": 0}]:
        lines.append(f"- timing method: {m['method']}")
    prof = env["tolerance_profile"]
    lines.append(f"- tolerance profile: {prof if prof else 'not recorded'} "
                 f"(check |c - r| <= atol + rtol·|r|; configs/eval.yaml precision.profiles)")
    for t in env["tolerances"]:
        lines.append(f"  - {t['dtype']}: atol {t['atol']:g}, rtol {t['rtol']:g} ({t['episodes']} episode(s))")
    for b in env["compile_baselines"]:
        lines.append(f"- torch.compile baseline: measured on {b['stored_gpu'] or 'an unrecorded GPU'}; {b['rescale']}")
    lines += _left_out(env.get("left_out"))
    return lines + [""]


STAGES = {"import": "not imported", "gpu_stage": "rejected by the GPU stage",
          "input_checks": "refused by the input checks (an argument, row or channel that does not matter)",
          "not_measured": "not measured on a GPU"}


def _left_out(left_out):
    """The tasks of the evaluated sources that the server held but did not serve: no metric counts them."""
    if left_out is None:
        return []
    if not left_out:
        return ["- tasks of these sources the server left out: none"]
    lines = ["- tasks of these sources the server left out (no metric counts them):"]
    by_source = {}
    for x in left_out:
        by_source.setdefault(x["source"], {}).setdefault(x["stage"], []).append(x)
    for source, stages in sorted(by_source.items()):
        parts = []
        for stage, xs in stages.items():
            reasons = ", ".join(f"{x['reason']} {x['rows']}" for x in xs if x["reason"])
            parts.append(f"{sum(x['rows'] for x in xs)} {STAGES.get(stage, stage)}" + (f" ({reasons})" if reasons else ""))
        lines.append(f"  - {source}: " + "; ".join(parts))
    return lines


def _run(rep, bootstrap):
    lines = [f"## Run {rep['name']}", "",
             f"Model(s): {', '.join(rep['models']) or '–'}. Episodes played: {rep['episodes']} over {rep['tasks']} "
             f"task(s); judged: {rep['judged']}; played with no GPU lane (not judged): {rep['unjudged']}; "
             f"could not be played (endpoint or server errors): {rep['errors']}.", ""]
    if rep["unjudged"] and not rep["judged"]:
        lines += ["**NOTHING COULD BE JUDGED**: every episode was played on a server with no GPU lane "
                  "(kforge-evaluate --allow-no-gpu); the metrics below are undefined.", ""]
    if rep["verdicts"]:
        lines += ["Final verdicts: " + ", ".join(f"{k} {v}" for k, v in rep["verdicts"].items()) + ".", ""]
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
    for grouping, groups in rep["groups"].items():
        if not groups:
            continue
        lines += [f"### By {GROUP_TITLES[grouping]}", "",
                  "| group | episodes | tasks | " + " | ".join(GROUP_COLUMNS) + " |",
                  "| --- | --- | --- | " + " | ".join("---" for _ in GROUP_COLUMNS) + " |"]
        for g, res in groups.items():
            cells = [_cell(res["metrics"][c], c) for c in GROUP_COLUMNS]
            lines.append(f"| {g} | {res['episodes']} | {res['tasks']} | " + " | ".join(cells) + " |")
        lines.append("")
    plots = rep.get("plots") or {}
    if plots:
        lines += [f"![fast_p]({plots['fast_p']}) ![speedups]({plots['speedups']})", ""]
    return lines


def _comparison(c):
    lines = [f"## {c['b']} against {c['a']}", "",
             f"{c['pairs']} episode(s) judged in both, matched by task and seed, over {c['tasks']} task(s) "
             f"(only in {c['a']}: {c['only_in_a']}; only in {c['b']}: {c['only_in_b']}).", ""]
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
            f"{i['task']} (seed {i['seed']}: {_sp(i['a'], i['a_verdict'])} -> {_sp(i['b'], i['b_verdict'])})"
            for i in items) if items else ""))
    if c.get("plot"):
        lines += ["", f"![comparison]({c['plot']})"]
    return lines + [""]


def _sp(s, verdict):
    return f"{s:.2f}x" if s is not None else str(verdict or "no submission")


def render(doc):
    b = doc["bootstrap"]
    lines = ["# kforge evaluation report", "",
             "Inputs: " + ", ".join(f"`{p}`" for p in doc.get("inputs", [])) + ".", "",
             f"Intervals: {b['method']}, B = {b['resamples']} resamples, seed {b['seed']}, "
             f"{int(100 * b['confidence'])} % percentile intervals. Definitions: tools/python/README.md, Report. "
             "Failed episodes enter the all-episode geometric means as speedup 1x; the 'correct only' "
             "means (KernelBench's convention) leave them out.", ""]
    for rep in doc["runs"]:
        lines += _run(rep, b)
    for c in doc["comparisons"]:
        lines += _comparison(c)
    return "\n".join(lines).rstrip() + "\n"
