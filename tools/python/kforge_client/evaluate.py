"""Evaluate a model (an OpenAI-compatible chat endpoint: vLLM, SGLang, an API) on a split of the
server's tasks, many episodes at once, into a JSONL file that a rerun resumes.

    kforge-evaluate --server tcp://HOST:PORT --chat-url http://HOST:8000/v1 \\
        --model NAME --split heldout --seeds 0,1,2 --concurrency 16 --out heldout.jsonl

(or ``python -m kforge_client.evaluate``). ``--replay DIR`` plays stored candidates instead of a
model (``DIR/TASK/`` holds one candidate's files; kforge_client.adapters.replay_eval), so that a
set written elsewhere is judged and reported as a model's would be.

A server without a GPU lane (its health lists no GPU) cannot judge a submission: kforge-evaluate
refuses it unless --allow-no-gpu, and then the summary says how many episodes nothing could be
judged in (their lines carry "no_gpu": true and are played again by a run against a server with
GPUs).

One line per episode (task, seed, episode_reward, termination_reason, turns, the final step's
reward info, seconds) and what the report needs: `server` (its version, GPU lanes and `left_out`,
the rows of the evaluated sources it does not serve, from health), `task_meta` (split, source,
dtype, operator count, KernelBench level and stored baselines from the `tasks` listing; the
tolerance the prompt states), `judge` (the last evaluation report's device: GPU, driver API,
CUDA, torch; its timing method; the candidate's and eager's median ms, the rescaled torch.compile
ms and both speedups). A line with "error" is an episode that could not
be played (the endpoint failed, the server did not answer, was full or stopping): a rerun plays it
again, and skips every episode already written without one. A line with termination_reason
"step_error" (and "step_error": the server's error) is an episode the server's error reply to one
of its steps ended: it was played, and every metric counts it as a failure. Progress goes to stderr; a summary of the whole file (this run's
lines and earlier ones) goes to stdout at the end, or as JSON with --json; --report DIR also
writes the model's report there (kforge_client.report: report.md, report.json, plots). Each
worker thread has its own server connection. Exit 1 when no episode of the model in the file was
played to its end; 2 for a usage error.
"""
PROG = "kforge-evaluate"
import argparse
import collections
import concurrent.futures
import json
import math
import os
import re
import sys
import threading
import time
from typing import Any

from .adapters.openai_eval import ChatEvaluator, StepError, http_url
from .adapters.replay_eval import ReplayEvaluator
from .client import Client
from .errors import ServerUnavailable
from .report.rows import read_jsonl


def task_names(client, split=None, tasks=None, limit=None) -> list[str]:
    """The tasks to play: the given names, or every task of the split (in the server's order)."""
    if tasks:
        names = list(tasks)
    else:
        names = [t["name"] for t in listing(client, split=split)]
    return names[:limit] if limit else names


def listing(client, **query) -> list[dict[str, Any]]:
    """Every task of the server's `tasks` listing that matches the query, page by page."""
    out, offset = [], 0
    while True:
        page = client.tasks(limit=500, offset=offset, **query)
        out += page["tasks"]
        if page.get("next_offset") is None:
            return out
        offset = page["next_offset"]


def task_facts(client, names) -> dict[str, dict[str, Any]]:
    """{name: what the server's listing says of it} for the report: split, source, dtype, operator
    count, KernelBench level and tolerance profile (imported tasks carry them), the stored baselines.
    The samples are listed only when asked for by source, so both listings are read."""
    wanted, facts = set(names), {}
    for query in ({}, {"source": "samples"}):
        for t in listing(client, **query):
            if t["name"] in wanted:
                facts[t["name"]] = {"split": t.get("split"), "source": t.get("source"), "dtype": t.get("dtype"),
                                    "n_ops": t.get("n_ops"), "level": t.get("level"), "eager_ms": t.get("eager_ms"),
                                    "tolerance_profile": t.get("tolerance_profile"),
                                    "compile_ms": t.get("compile_ms")}
        if wanted <= set(facts):
            break
    return facts


STEP_ERROR = "step_error"  # the termination_reason of an episode that a step's error reply ended
TOLERANCE = re.compile(r"Tolerance: atol = ([-+0-9.eE]+), rtol = ([-+0-9.eE]+)")


def prompt_tolerance(prompt) -> dict[str, float] | None:
    """The task's tolerance as its prompt states it (configs/prompt/kernel.md), or None."""
    m = TOLERANCE.search(prompt or "")
    return {"atol": float(m.group(1)), "rtol": float(m.group(2))} if m else None


def judge_facts(info) -> dict[str, Any]:
    """Where and how the final step was judged: the evaluation report's device and timing method
    (env/evaluator/EVAL_REPORT.md), and the candidate's times and speedups of the reward's evidence."""
    info = info or {}
    report = info.get("report") if isinstance(info.get("report"), dict) else {}
    reward = info.get("reward") if isinstance(info.get("reward"), dict) else {}
    device = report.get("device") if isinstance(report.get("device"), dict) else None
    timing = report.get("timing") if isinstance(report.get("timing"), dict) else {}
    eager = reward.get("eager") if isinstance(reward.get("eager"), dict) else {}
    comp = reward.get("torch_compile") if isinstance(reward.get("torch_compile"), dict) else {}
    out = {"verdict": report.get("verdict", info.get("verdict"))}
    if device:
        out["device"] = {k: device.get(k) for k in ("name", "arch", "compute_capability", "cuda", "driver_api", "torch")}
    if timing.get("method"):
        out["timing_method"] = timing["method"]
    if eager:
        out.update(candidate_ms=eager.get("candidate_median_ms"), eager_ms=eager.get("eager_median_ms"),
                   speedup_eager=(eager.get("speedup") or {}).get("point"))
    if comp.get("available"):
        out.update(compile_ms=comp.get("rescaled_ms"), speedup_compile=(comp.get("speedup") or {}).get("point"))
    return out


def read_rows(path) -> list[dict[str, Any]]:
    """The file's complete episode lines (the report's reader, kforge_client.report.rows); none yet
    when it does not exist."""
    return read_jsonl(path) if os.path.exists(path) else []


def summarize(rows) -> dict[str, Any]:
    """Over the episodes played (one per task and seed, the last line wins); errors: the episodes
    with only error lines. An episode that a step's error reply ended (termination_reason
    step_error, no reward) is played: it counts in every share as a failure, and the mean reward
    is over the episodes the server scored."""
    by_key = {(r["task"], r["seed"]): r for r in rows if "error" not in r}
    played = list(by_key.values())
    n_played = len(played)
    ended = [r for r in played if r.get("termination_reason") != STEP_ERROR]  # played to their end
    unjudged = sum(1 for r in ended if r.get("no_gpu"))
    errors = {(r["task"], r["seed"]) for r in rows if "error" in r} - set(by_key)
    step_errors = n_played - len(ended)
    rewards = [r["episode_reward"] for r in played if isinstance(r.get("episode_reward"), (int, float))]
    n = len(played)

    def evidence(r, which):  # the final reward's timed comparison (reward/episode_reward.cpp evidence)
        e = (r.get("reward") or {}).get(which)
        return e if isinstance(e, dict) else {}

    speedups = sorted(evidence(r, "eager")["speedup"]["point"] for r in played
                      if isinstance(evidence(r, "eager").get("speedup"), dict))
    out = {"episodes": n, "errors": len(errors), "unjudged": unjudged, "step_errors": step_errors,
           "judged": len(ended) - unjudged,
           "tasks": len({r["task"] for r in played}),
           "scored": len(rewards),
           "mean_reward": sum(rewards) / len(rewards) if rewards else None,
           "positive_reward_share": sum(1 for x in rewards if x > 0) / n if n else None,
           "beats_eager_share": sum(1 for r in played if evidence(r, "eager").get("beats")) / n if n else None,
           "beats_compile_share": sum(1 for r in played if evidence(r, "torch_compile").get("beats")) / n if n else None,
           "timed_submissions": len(speedups),
           "speedup_over_eager_median": speedups[len(speedups) // 2] if speedups else None,
           "speedup_over_eager_geomean": (math.exp(sum(math.log(x) for x in speedups) / len(speedups))
                                          if speedups and all(x > 0 for x in speedups) else None),
           "termination": dict(collections.Counter(str(r.get("termination_reason")) for r in played)),
           "reward_rule": dict(collections.Counter(str((r.get("reward") or {}).get("rule")) for r in played))}
    return out


def summary_table(s) -> str:
    lines = [f"episodes {s['episodes']} over {s['tasks']} task(s); {s['errors']} could not be played"]
    if s.get("step_errors"):
        lines.append(f"{s['step_errors']} ended by the server's error reply to a step (counted as failures, "
                     f"with no reward)")
    if s.get("unjudged"):
        lines.append(f"NOTHING COULD BE JUDGED in {s['unjudged']} of them: played on a server with no GPU lane "
                     f"(--allow-no-gpu); verify, profile and submit answered no_gpu, so their rewards measure nothing")
    if s["episodes"]:
        if s["mean_reward"] is not None:
            lines.append(f"mean episode reward {s['mean_reward']:.4f} over the {s['scored']} the server scored; "
                         f"reward > 0 in {100 * s['positive_reward_share']:.1f} %")
        lines.append(f"beats eager in {100 * s['beats_eager_share']:.1f} %, torch.compile in "
                     f"{100 * s['beats_compile_share']:.1f} % of the episodes")
        if s["timed_submissions"]:
            geo = s["speedup_over_eager_geomean"]
            lines.append(f"{s['timed_submissions']} timed submission(s): speedup over eager median "
                         f"{s['speedup_over_eager_median']:.3f}x" + (f", geomean {geo:.3f}x" if geo else ""))
        for key, title in (("termination", "ended by"), ("reward_rule", "final reward rule")):
            parts = ", ".join(f"{k} {v}" for k, v in sorted(s[key].items(), key=lambda kv: -kv[1]))
            lines.append(f"{title}: {parts}")
    return "\n".join(lines)


def parse_args(argv) -> argparse.Namespace:
    """The flags, checked: every usage error exits 2 with argparse's message."""
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    ap.add_argument("--server", required=True, help="the kforge server's endpoint (tcp://HOST:PORT or ipc://PATH)")
    policy = ap.add_mutually_exclusive_group(required=True)
    policy.add_argument("--chat-url", default=None,
                        help="an OpenAI-compatible base URL, http(s) only (…/v1 or …/v1/chat/completions)")
    policy.add_argument("--replay", default=None, metavar="DIR",
                        help="play stored candidates instead of a model: DIR/TASK/ holds the candidate's files, written "
                             "and submitted in one turn (a task without a folder submits nothing: a failure)")
    ap.add_argument("--model", required=True, help="the model's name (with --replay: the candidates' label)")
    which = ap.add_mutually_exclusive_group()
    which.add_argument("--split", default=None,
                       help="play every task of this split (default heldout; train only when named here)")
    which.add_argument("--tasks", default=None, help="comma-separated task names instead of a split")
    ap.add_argument("--limit", type=int, default=None, help="at most this many tasks (>= 1)")
    ap.add_argument("--seeds", default="0", help="comma-separated episode seeds, each task once per seed")
    ap.add_argument("--concurrency", type=int, default=8, help="episodes played at once")
    ap.add_argument("--max-turns", type=int, default=None, help="the episode option max_turns")
    ap.add_argument("--temperature", type=float, default=0.0)
    ap.add_argument("--max-tokens", type=int, default=4096)
    ap.add_argument("--api-key-env", default="OPENAI_API_KEY", help="environment variable holding the API key, if any")
    ap.add_argument("--system-prompt", default=None, help="a file whose text is the system message")
    ap.add_argument("--out", required=True, help="JSONL results, appended and resumed")
    ap.add_argument("--json", action="store_true", help="print the summary as JSON")
    ap.add_argument("--connect-timeout", type=float, default=30.0,
                    help="seconds to wait for the server's health at start (default 30)")
    ap.add_argument("--timeout", type=float, default=120.0,
                    help="seconds one server request (reset, step, close) may take before the episode is given up "
                         "(default 120)")
    ap.add_argument("--chat-timeout", type=float, default=600.0,
                    help="seconds one chat completion may take (default 600)")
    ap.add_argument("--report", default=None, metavar="DIR",
                    help="at the end, write the report of this model's rows (report.md, report.json, plots) into DIR")
    ap.add_argument("--allow-no-gpu", action="store_true",
                    help="play against a server with no GPU lane anyway (nothing can be judged; the summary says so)")
    a = ap.parse_args(argv)
    if a.concurrency < 1:
        ap.error("--concurrency must be >= 1")
    if a.limit is not None and a.limit < 1:
        ap.error(f"--limit must be >= 1, not {a.limit}")
    for flag in ("timeout", "chat_timeout", "connect_timeout"):
        if not getattr(a, flag) > 0:
            ap.error(f"--{flag.replace('_', '-')} must be > 0 seconds")
    if a.tasks is not None:
        a.task_list = [t.strip() for t in a.tasks.split(",")]
        if not any(a.task_list) or not all(a.task_list):
            ap.error(f"--tasks takes task names separated by commas, not {a.tasks!r}")
    else:
        a.task_list = None
    if a.split is not None and not a.split.strip():
        ap.error("--split takes a split name (heldout, train, ...), not an empty string")
    a.split_named = a.split is not None
    a.split = a.split or "heldout"
    try:
        seeds = [int(s) for s in a.seeds.split(",") if s.strip()]
    except ValueError:
        ap.error(f"--seeds takes integers separated by commas, not '{a.seeds}'")
    if not seeds:
        ap.error(f"--seeds takes integers separated by commas, not {a.seeds!r}")
    a.seed_list = seeds
    if a.chat_url is not None:
        try:
            http_url(a.chat_url)
        except ValueError as e:
            ap.error(f"--chat-url: {e}")
    elif not os.path.isdir(a.replay):
        ap.error(f"--replay {a.replay}: not a folder")
    return a


def plan(c, a) -> tuple[list[str], dict[str, dict[str, Any]], str | None]:
    """(names, facts, problem): the tasks to play and what the listing says of them, or why none."""
    if a.task_list is not None:
        names = list(dict.fromkeys(a.task_list))[:a.limit]
        facts = task_facts(c, names)
        unknown = [n for n in names if n not in facts]
        if unknown:
            return names, facts, f"the server serves no task named {', '.join(unknown)}"
        return names, facts, None
    names = task_names(c, split=a.split, limit=a.limit)
    facts = task_facts(c, names) if names else {}
    if not names:
        return names, facts, f"split {a.split} has none"
    # The listing answers the split asked for; a task of another split (train, above all) is never
    # played by a run that did not name it.
    stray = sorted(n for n in names if facts.get(n, {}).get("split") != a.split)
    if stray:
        return names, facts, f"the server listed {len(stray)} task(s) outside split {a.split} ({', '.join(stray[:5])})"
    return names, facts, None


def what_is_played(a, names, facts) -> str:
    """One line: the split (or the named tasks and their splits) and the count."""
    splits = collections.Counter(str(facts.get(n, {}).get("split")) for n in names)
    per_split = ", ".join(f"{k} {v}" for k, v in sorted(splits.items()))
    if a.task_list is not None:
        return f"{len(names)} task(s) named by --tasks (split {per_split})"
    return f"split {a.split}: {len(names)} task(s)" + (f" (--limit {a.limit})" if a.limit else "")


def record(a, row, lock, progress) -> None:
    """Appends one episode's line and prints its progress line."""
    with lock:
        with open(a.out, "a") as f:
            f.write(json.dumps(row) + "\n")
        progress["done"] += 1
        k, rate = progress["done"], progress["done"] / max(1e-9, time.monotonic() - progress["t0"])
        left = (progress["jobs"] - k) / rate if rate > 0 else 0
        if "error" in row:
            what = f"error {row['error']}"
        elif row.get("termination_reason") == STEP_ERROR:
            what = f"ended by a step's error reply after {row['turns']} turn(s): {row['step_error']}"
        else:
            what = f"reward {row['episode_reward']:.4f} ({row['termination_reason']}, {row['turns']} turns)"
        print(f"evaluate: [{k}/{progress['jobs']}] {row['task']} seed {row['seed']}: {what} | {60 * rate:.1f} "
              f"episodes/min, ~{left / 60:.1f} min left", file=sys.stderr, flush=True)


def play_all(a, jobs, facts, server, no_gpu, system) -> None:
    """Plays the jobs, `a.concurrency` at once, a line per episode into a.out."""
    options = {"max_turns": a.max_turns} if a.max_turns else None
    local = threading.local()
    clients = []
    lock = threading.Lock()
    progress = {"t0": time.monotonic(), "done": 0, "jobs": len(jobs)}

    def play(job):
        task, seed = job
        if not hasattr(local, "evaluator"):  # a connection per thread: a ZeroMQ socket is not thread-safe
            client = Client(a.server, timeout=a.timeout)
            with lock:
                clients.append(client)
            local.evaluator = ReplayEvaluator(a.replay, client) if a.replay else ChatEvaluator(
                a.chat_url, a.model, client, api_key=os.environ.get(a.api_key_env), temperature=a.temperature,
                max_tokens=a.max_tokens, http_timeout=a.chat_timeout)
        start = time.monotonic()
        row = {"task": task, "seed": seed, "model": a.model, "server": server}
        if no_gpu:
            row["no_gpu"] = True
        try:
            r = local.evaluator.run_episode(task, seed=seed, options=options, system_prompt=system)
            row.update(episode_reward=r.episode_reward, termination_reason=r.termination_reason, turns=r.turns,
                       reward=(r.info or {}).get("reward"),
                       task_meta=dict(facts.get(task, {}), tolerance=prompt_tolerance(r.prompt)),
                       judge=judge_facts(r.info))
        except StepError as e:  # played, and ended by the server: a failure every metric counts
            row.update(episode_reward=None, termination_reason=STEP_ERROR, turns=e.turns,
                       step_error=f"{e.error.kind}: {e.error.message}", reward={"rule": STEP_ERROR},
                       task_meta=dict(facts.get(task, {})), judge={})
        except Exception as e:  # noqa: BLE001 - written, and played again by the next run
            row["error"] = f"{type(e).__name__}: {e}"
        row["seconds"] = round(time.monotonic() - start, 3)
        record(a, row, lock, progress)

    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=a.concurrency) as pool:
            for f in [pool.submit(play, j) for j in jobs]:
                f.result()
    finally:
        for client in clients:
            client.close()


def main(argv=None) -> int:
    a = parse_args(argv)
    system = None
    if a.system_prompt:
        with open(a.system_prompt) as f:
            system = f.read()

    with Client(a.server, timeout=a.timeout) as c:
        try:
            health = c.wait_ready(timeout=a.connect_timeout)
        except ServerUnavailable as e:
            print(f"{PROG}: {e}", file=sys.stderr)
            return 2
        no_gpu = not health.get("gpus")
        if no_gpu and not a.allow_no_gpu:
            print(f"{PROG}: the server at {a.server} has no GPU lane (its health lists no GPU): verify, profile and "
                  f"submit answer no_gpu there, so no episode could be judged. Serve on a GPU host, or pass "
                  f"--allow-no-gpu to play anyway.", file=sys.stderr)
            return 2
        names, facts, problem = plan(c, a)
        # What the server holds but does not serve (skipped by the import, rejected by the GPU stage, not
        # measured), for the sources evaluated: the tasks the run's denominator leaves out.
        sources = {f.get("source") for f in facts.values()}
        server = {"version": health.get("version"), "gpus": [g.get("name") for g in health.get("gpus") or []],
                  "left_out": [x for x in health.get("left_out") or [] if x.get("source") in sources]}
    if problem:
        print(f"evaluate: no tasks to play: {problem}", file=sys.stderr)
        return 2
    seeds = a.seed_list
    mine = [r for r in read_rows(a.out) if r.get("model") == a.model]  # one file may hold several models
    # Episodes played without a GPU count as done only for another run without one.
    done = {(r["task"], r["seed"]) for r in mine if "error" not in r and (no_gpu or not r.get("no_gpu"))}
    jobs = [(t, s) for t in names for s in seeds if (t, s) not in done]
    print(f"evaluate: playing {what_is_played(a, names, facts)} x {len(seeds)} seed(s): {len(jobs)} episode(s) to "
          f"play, {len(names) * len(seeds) - len(jobs)} already in {a.out}; {a.concurrency} at once",
          file=sys.stderr, flush=True)
    if no_gpu:
        print("evaluate: the server has no GPU lane (--allow-no-gpu): nothing will be judged", file=sys.stderr, flush=True)

    play_all(a, jobs, facts, server, no_gpu, system)

    s = summarize([r for r in read_rows(a.out) if r.get("model") == a.model])
    print(json.dumps(s, indent=1) if a.json else summary_table(s))
    if a.report:
        from .report import write_report  # matplotlib: the extra `report`
        write_report([a.out], a.report, model=a.model)
        print(f"evaluate: wrote the report into {a.report} (report.md, report.json, plots)", file=sys.stderr)
    # Played to its end: judged, or (under --allow-no-gpu, which waives judging) played on a server without GPUs.
    finished = s["judged"] + (s["unjudged"] if a.allow_no_gpu else 0)
    if not finished:
        print(f"{PROG}: FAILED: no episode of {a.model} in {a.out} was played to its end ({s['errors']} could not be "
              f"played, {s['step_errors']} ended by a step's error reply)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
