"""Evaluate a model (an OpenAI-compatible chat endpoint: vLLM, SGLang, an API) on a split of the
server's tasks, many episodes at once, into a JSONL file that a rerun resumes.

    kforge-evaluate --server tcp://HOST:PORT --chat-url http://HOST:8000/v1 \\
        --model NAME --split heldout --seeds 0,1,2 --concurrency 16 --out heldout.jsonl

(or ``python -m kforge_client.evaluate``). A server without a GPU lane (its health lists no GPU)
cannot judge a submission: kforge-evaluate refuses it unless --allow-no-gpu, and then the summary
says how many episodes nothing could be judged in (their lines carry "no_gpu": true and are played
again by a run against a server with GPUs).

One line per episode (task, seed, episode_reward, termination_reason, turns, the final step's
reward info, seconds) and what the report needs: `server` (its version, GPU lanes and `left_out`,
the rows of the evaluated sources it does not serve, from health), `task_meta` (split, source,
dtype, operator count, KernelBench level and stored baselines from the `tasks` listing; the
tolerance the prompt states), `judge` (the last evaluation report's device: GPU, driver API,
CUDA, torch; its timing method; the candidate's and eager's median ms, the rescaled torch.compile
ms and both speedups). A line with "error" is an episode that could not
be played (the endpoint or the server failed): a rerun plays it again, and skips every episode
already written without one. Progress goes to stderr; a summary of the whole file (this run's
lines and earlier ones) goes to stdout at the end, or as JSON with --json; --report DIR also
writes the model's report there (kforge_client.report: report.md, report.json, plots). Each
worker thread has its own server connection.
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

from .adapters.openai_eval import ChatEvaluator
from .client import Client
from .errors import ServerUnavailable
from .report.rows import read_jsonl


def task_names(client, split=None, tasks=None, limit=None):
    """The tasks to play: the given names, or every task of the split (in the server's order)."""
    if tasks:
        names = list(tasks)
    else:
        names = [t["name"] for t in listing(client, split=split)]
    return names[:limit] if limit else names


def listing(client, **query):
    """Every task of the server's `tasks` listing that matches the query, page by page."""
    out, offset = [], 0
    while True:
        page = client.tasks(limit=500, offset=offset, **query)
        out += page["tasks"]
        if page.get("next_offset") is None:
            return out
        offset = page["next_offset"]


def task_facts(client, names):
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


TOLERANCE = re.compile(r"Tolerance: atol = ([-+0-9.eE]+), rtol = ([-+0-9.eE]+)")


def prompt_tolerance(prompt):
    """The task's tolerance as its prompt states it (configs/prompt/kernel.md), or None."""
    m = TOLERANCE.search(prompt or "")
    return {"atol": float(m.group(1)), "rtol": float(m.group(2))} if m else None


def judge_facts(info):
    """Where and how the final step was judged: the evaluation report's device and timing method
    (env/judge/EVAL_REPORT.md), and the candidate's times and speedups of the reward's evidence."""
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


def read_rows(path):
    """The file's complete episode lines (the report's reader, kforge_client.report.rows); none yet
    when it does not exist."""
    return read_jsonl(path) if os.path.exists(path) else []


def summarize(rows):
    """Over the episodes played (one per task and seed, the last line wins); errors: the episodes
    with only error lines."""
    by_key = {(r["task"], r["seed"]): r for r in rows if "error" not in r}
    played = list(by_key.values())
    unjudged = sum(1 for r in played if r.get("no_gpu"))
    errors = {(r["task"], r["seed"]) for r in rows if "error" in r} - set(by_key)
    rewards = [r["episode_reward"] for r in played]
    n = len(played)

    def evidence(r, which):  # the final reward's timed comparison (reward/episode_reward.cpp evidence)
        e = (r.get("reward") or {}).get(which)
        return e if isinstance(e, dict) else {}

    speedups = sorted(evidence(r, "eager")["speedup"]["point"] for r in played
                      if isinstance(evidence(r, "eager").get("speedup"), dict))
    out = {"episodes": n, "errors": len(errors), "unjudged": unjudged,
           "tasks": len({r["task"] for r in played}),
           "mean_reward": sum(rewards) / n if n else None,
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


def summary_table(s):
    lines = [f"episodes {s['episodes']} over {s['tasks']} task(s); {s['errors']} could not be played"]
    if s.get("unjudged"):
        lines.append(f"NOTHING COULD BE JUDGED in {s['unjudged']} of them: played on a server with no GPU lane "
                     f"(--allow-no-gpu); verify, profile and submit answered no_gpu, so their rewards measure nothing")
    if s["episodes"]:
        lines.append(f"mean episode reward {s['mean_reward']:.4f}; reward > 0 in {100 * s['positive_reward_share']:.1f} %")
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


def main(argv=None):
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    ap.add_argument("--server", required=True, help="the kforge server's endpoint (tcp://HOST:PORT or ipc://PATH)")
    ap.add_argument("--chat-url", required=True, help="an OpenAI-compatible base URL (…/v1 or …/v1/chat/completions)")
    ap.add_argument("--model", required=True)
    which = ap.add_mutually_exclusive_group()
    which.add_argument("--split", default="heldout", help="play every task of this split (default heldout)")
    which.add_argument("--tasks", default=None, help="comma-separated task names instead of a split")
    ap.add_argument("--limit", type=int, default=None, help="at most this many tasks")
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
    ap.add_argument("--report", default=None, metavar="DIR",
                    help="at the end, write the report of this model's rows (report.md, report.json, plots) into DIR")
    ap.add_argument("--allow-no-gpu", action="store_true",
                    help="play against a server with no GPU lane anyway (nothing can be judged; the summary says so)")
    a = ap.parse_args(argv)
    if a.concurrency < 1:
        ap.error("--concurrency must be >= 1")
    try:
        seeds = [int(s) for s in a.seeds.split(",") if s.strip()]
    except ValueError:
        ap.error(f"--seeds takes integers separated by commas, not '{a.seeds}'")
    system = None
    if a.system_prompt:
        with open(a.system_prompt) as f:
            system = f.read()

    with Client(a.server) as c:
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
        names = task_names(c, split=None if a.tasks else a.split,
                           tasks=[t for t in (a.tasks or "").split(",") if t], limit=a.limit)
        facts = task_facts(c, names) if names else {}
        # What the server holds but does not serve (skipped by the import, rejected by the GPU stage, not
        # measured), for the sources evaluated: the tasks the run's denominator leaves out.
        sources = {f.get("source") for f in facts.values()}
        server = {"version": health.get("version"), "gpus": [g.get("name") for g in health.get("gpus") or []],
                  "left_out": [x for x in health.get("left_out") or [] if x.get("source") in sources]}
    if not names:
        print(f"evaluate: no tasks ({'--tasks is empty' if a.tasks is not None else 'split ' + a.split + ' has none'})",
              file=sys.stderr)
        return 2
    mine = [r for r in read_rows(a.out) if r.get("model") == a.model]  # one file may hold several models
    # Episodes played without a GPU count as done only for another run without one.
    done = {(r["task"], r["seed"]) for r in mine if "error" not in r and (no_gpu or not r.get("no_gpu"))}
    jobs = [(t, s) for t in names for s in seeds if (t, s) not in done]
    print(f"evaluate: {len(names)} task(s) x {len(seeds)} seed(s): {len(jobs)} episode(s) to play, "
          f"{len(names) * len(seeds) - len(jobs)} already in {a.out}; {a.concurrency} at once", file=sys.stderr, flush=True)
    if no_gpu:
        print("evaluate: the server has no GPU lane (--allow-no-gpu): nothing will be judged", file=sys.stderr, flush=True)

    options = {"max_turns": a.max_turns} if a.max_turns else None
    local = threading.local()
    clients = []
    lock = threading.Lock()
    t0 = time.monotonic()
    finished = [0]

    def play(job):
        task, seed = job
        if not hasattr(local, "evaluator"):  # a connection per thread: a ZeroMQ socket is not thread-safe
            client = Client(a.server)
            with lock:
                clients.append(client)
            local.evaluator = ChatEvaluator(a.chat_url, a.model, client, api_key=os.environ.get(a.api_key_env),
                                            temperature=a.temperature, max_tokens=a.max_tokens)
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
        except Exception as e:  # noqa: BLE001 - written, and played again by the next run
            row["error"] = f"{type(e).__name__}: {e}"
        row["seconds"] = round(time.monotonic() - start, 3)
        with lock:
            with open(a.out, "a") as f:
                f.write(json.dumps(row) + "\n")
            finished[0] += 1
            k, rate = finished[0], finished[0] / max(1e-9, time.monotonic() - t0)
            left = (len(jobs) - k) / rate if rate > 0 else 0
            what = f"error {row['error']}" if "error" in row else \
                f"reward {row['episode_reward']:.4f} ({row['termination_reason']}, {row['turns']} turns)"
            print(f"evaluate: [{k}/{len(jobs)}] {task} seed {seed}: {what} | {60 * rate:.1f} episodes/min, "
                  f"~{left / 60:.1f} min left", file=sys.stderr, flush=True)

    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=a.concurrency) as pool:
            for f in [pool.submit(play, j) for j in jobs]:
                f.result()
    finally:
        for client in clients:
            client.close()

    s = summarize([r for r in read_rows(a.out) if r.get("model") == a.model])
    print(json.dumps(s, indent=1) if a.json else summary_table(s))
    if a.report:
        from .report import write_report  # matplotlib: the extra `report`
        write_report([a.out], a.report, model=a.model)
        print(f"evaluate: wrote the report into {a.report} (report.md, report.json, plots)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
