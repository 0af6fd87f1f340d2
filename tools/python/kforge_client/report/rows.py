"""kforge-evaluate's JSONL rows as episodes: what each one counts for in the report.

A row is one episode (`kforge_client.evaluate`): `task`, `seed`, `model`, `episode_reward`,
`termination_reason`, `reward` (the final reward's evidence, env/episode/ENVIRONMENT.md, Info),
and, from kforge-evaluate's own records, `task_meta` (the server's `tasks` listing and the
prompt's tolerance), `judge` (the evaluation report's device and timing method) and `server`
(its health: version and GPUs). Older rows without the last three still count; the report then
says what it could not learn.
"""
import collections
import json
import math
import os
from typing import Any

GROUPINGS = ("level_or_ops", "dtype", "split", "source")
TIER_RULES = ("correct", "faster_than_eager", "faster_than_both")


NONE = type(None)
TEXT = (str, NONE)
NUMBER = (int, float)  # bool is an int: refused apart
SCALAR = (str, int, float, bool, NONE)
# The fields the report reads and the types they may have: a dict spec is a dict or null (its keys
# checked when present), ("list", spec) a list or null of such. A line with another type is garbage.
ROW_SPEC = {
    "task": (str,), "seed": (int, str), "model": TEXT, "error": SCALAR, "no_gpu": (bool, NONE),
    "episode_reward": NUMBER + (NONE,), "termination_reason": TEXT,
    "reward": {"verdict": TEXT, "rule": TEXT, "shapes": {"status": TEXT},
               "last": {"rule": TEXT, "eager": {"speedup": {"point": SCALAR}}},
               "eager": {"beats": SCALAR, "speedup": {"point": SCALAR}},
               "torch_compile": {"available": SCALAR, "beats": SCALAR, "rescale": TEXT, "stored_gpu": TEXT,
                                 "speedup": {"point": SCALAR}}},
    "task_meta": {"split": TEXT, "source": TEXT, "dtype": TEXT, "tolerance_profile": TEXT, "level": SCALAR,
                  "n_ops": SCALAR, "tolerance": {"atol": NUMBER, "rtol": NUMBER}},
    "judge": {"timing_method": TEXT,
              "device": {"name": SCALAR, "driver_api": SCALAR, "cuda": SCALAR, "torch": SCALAR}},
    "server": {"version": TEXT, "gpus": ("list", (str,)),
               "left_out": ("list", {"source": TEXT, "stage": TEXT, "reason": TEXT, "rows": (int,), "level": (int, NONE)})},
}
REQUIRED = ("task", "seed")
MAX_DEPTH_ERRORS = (ValueError, RecursionError)  # json: malformed text; nesting too deep for the decoder


def _type_error(value, spec, where):
    """Why `value` does not fit `spec` (ROW_SPEC's shapes), or None."""
    if isinstance(spec, dict):
        if value is None:
            return None
        if not isinstance(value, dict):
            return f"{where} is {type(value).__name__}, not an object"
        for key, sub in spec.items():
            if key in value:
                why = _type_error(value[key], sub, f"{where}.{key}" if where else key)
                if why:
                    return why
        return None
    if isinstance(spec, tuple) and spec and spec[0] == "list":
        if value is None:
            return None
        if not isinstance(value, list):
            return f"{where} is {type(value).__name__}, not a list"
        for i, item in enumerate(value):
            why = _type_error(item, spec[1], f"{where}[{i}]")
            if why:
                return why
        return None
    if isinstance(value, bool) and bool not in spec or not isinstance(value, spec):
        return f"{where} is {type(value).__name__} {json.dumps(value)[:40]}"
    return None


def row_problem(row) -> str | None:
    """Why a decoded line is not an episode row the report can count, or None."""
    if not isinstance(row, dict):
        return f"a JSON {type(row).__name__}, not an object"
    missing = [k for k in REQUIRED if k not in row]
    if missing:
        return "no " + " or ".join(missing)
    return _type_error(row, ROW_SPEC, "")


def read_jsonl_checked(path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(rows, unread): every line of the file that is an episode row, and for every other line
    {line, why} (not UTF-8, not JSON, not an object, a field of the wrong type, cut short by a
    killed run: the last line without its newline)."""
    rows, unread = [], []
    with open(path, "rb") as f:
        for n, raw in enumerate(f, start=1):
            if not raw.strip():
                continue
            why = None
            if not raw.endswith(b"\n"):
                why = "cut short (the last line has no newline: a run killed while writing it)"
            else:
                try:
                    row = json.loads(raw.decode("utf-8"))
                    why = row_problem(row)
                except UnicodeDecodeError:
                    why = "not UTF-8"
                except MAX_DEPTH_ERRORS as e:
                    why = "not JSON" + (" (nested too deep)" if isinstance(e, RecursionError) else "")
            if why:
                unread.append({"line": n, "why": why})
            else:
                rows.append(row)
    return rows, unread


def read_jsonl(path) -> list[dict[str, Any]]:
    """Every episode row of the file (read_jsonl_checked without the lines it could not read)."""
    return read_jsonl_checked(path)[0]


def _dict(x):
    return x if isinstance(x, dict) else {}


def _point(evidence):
    """The speedup's point estimate of a reward evidence block, or None."""
    s = _dict(evidence).get("speedup")
    p = _dict(s).get("point")
    return float(p) if isinstance(p, (int, float)) and math.isfinite(p) and p > 0 else None


def group_label(meta, grouping) -> str:
    """The group an episode falls in: KernelBench level when the task has one, else its operator count."""
    if grouping == "level_or_ops":
        level = meta.get("level")
        if level is not None:
            return f"level {level}"
        n = meta.get("n_ops")
        return f"{n} op" + ("" if n == 1 else "s") if n is not None else "unknown"
    value = meta.get(grouping)
    return str(value) if value is not None else "unknown"


def _last_speedup(reward, sp_eager):
    """The last submission's own speedup over eager: the evidence's `last` when the reward is a
    better verified version's (history.reward_from: best_verified; None when the last was not
    correct), else the episode's own."""
    last = reward.get("last")
    if not isinstance(last, dict):
        return sp_eager
    return _point(last.get("eager")) if last.get("rule") in TIER_RULES else None


def episode(row) -> dict[str, Any]:
    """One row as the report counts it. judged: played (no error) on a server that could judge it."""
    reward = _dict(row.get("reward"))
    meta = _dict(row.get("task_meta"))
    verdict = reward.get("verdict")
    correct = verdict == "pass"
    eager, comp = _dict(reward.get("eager")), _dict(reward.get("torch_compile"))
    compile_measured = comp.get("available") is True  # a stored torch.compile baseline, rescaled to now
    sp_eager = _point(eager) if correct else None
    sp_compile = _point(comp) if correct and compile_measured else None
    return {
        "task": row["task"], "seed": row["seed"], "model": row.get("model"),
        "judged": "error" not in row and not row.get("no_gpu"),
        "verdict": verdict if verdict is not None else ("no_submission" if reward.get("rule") == "no_submission" else None),
        "rule": reward.get("rule"),
        "correct": correct,
        "speedup_eager": sp_eager,
        "speedup_compile": sp_compile,
        "beats_eager": bool(correct and eager.get("beats")),
        "beats_compile": bool(correct and compile_measured and comp.get("beats")),
        "compile_baseline": compile_measured,
        # general | not_general | not_tested at the task's other shapes; None: the task has none
        # (or the row predates them). A not_general submission is correct at the task's own shape.
        "shapes": _dict(reward.get("shapes")).get("status"),
        # The last submission's own speedup when the reward is a better verified version's (the
        # evidence's `last`, history.reward_from: best_verified), else the same as speedup_eager.
        "speedup_eager_last": _last_speedup(reward, sp_eager),
        "episode_reward": row.get("episode_reward"),
        "groups": {g: group_label(meta, g) for g in GROUPINGS},
        "level": meta["level"] if isinstance(meta.get("level"), int) and not isinstance(meta.get("level"), bool) else None,
    }


class Run:
    """The episodes of one model in one or more files: the last line of each (task, seed) wins,
    an error line only where no played line exists."""

    def __init__(self, name, rows) -> None:
        self.name = name
        self.rows = rows
        played = {}
        for r in rows:
            if "error" not in r:
                played[(r["task"], r["seed"])] = r
        self.errors = sorted({(r["task"], r["seed"]) for r in rows if "error" in r} - set(played))
        self.played_rows = list(played.values())
        self.episodes = [episode(r) for r in self.played_rows]
        self.judged = [e for e in self.episodes if e["judged"]]
        self.unjudged = len(self.episodes) - len(self.judged)

    def by_key(self) -> dict[tuple[str, int | str], dict[str, Any]]:
        return {(e["task"], e["seed"]): e for e in self.judged}


def load_runs(paths, model=None, unread=None) -> list[Run]:
    """Runs from JSONL files: one run per (file, model) in the order given; `model` keeps one model.
    `unread` (a dict), when given, gets {path: [{line, why}]} for the files with lines not read."""
    runs = []
    for path in paths:
        rows, bad = read_jsonl_checked(path)
        if bad and unread is not None:
            unread[path] = bad
        if model is not None:
            rows = [r for r in rows if r.get("model") == model]
        models = list(dict.fromkeys(r.get("model") for r in rows))
        base = os.path.basename(path)
        base = base[: -len(".jsonl")] if base.endswith(".jsonl") and len(base) > len(".jsonl") else base
        if not models:
            runs.append(Run(base if model is None else f"{base}:{model}", []))
        for m in models:
            name = base if len(models) == 1 and model is None else f"{base}:{m}"
            runs.append(Run(name, [r for r in rows if r.get("model") == m]))
    return runs


def environment(run, eval_yaml=None) -> dict[str, Any]:
    """What the rows say about where and how the episodes were judged: GPUs, driver, CUDA, torch,
    the timing method, the tolerances and the precision profile they match, kforge's version, and
    the tasks of the evaluated sources the server left out (the denominator's missing rows)."""
    devices, methods, tolerances, versions, servers_gpus, baselines, named = (collections.Counter() for _ in range(7))
    left_out, sources, told = {}, set(), False
    for r in run.played_rows:
        judge, server, meta = _dict(r.get("judge")), _dict(r.get("server")), _dict(r.get("task_meta"))
        sources.add(meta.get("source"))
        if isinstance(server.get("left_out"), list):
            told = True
            for x in server["left_out"]:
                x = _dict(x)
                key = (x.get("source"), x.get("stage"), x.get("reason"), x.get("level"))
                left_out[key] = max(left_out.get(key, 0), int(x.get("rows") or 0))
        d = _dict(judge.get("device"))
        if d:
            devices[(d.get("name"), d.get("driver_api"), d.get("cuda"), d.get("torch"))] += 1
        if judge.get("timing_method"):
            methods[judge["timing_method"]] += 1
        named[meta.get("tolerance_profile")] += 1  # imported tasks: the profile the listing names
        tol = _dict(meta.get("tolerance"))
        if tol:
            tolerances[(meta.get("dtype"), tol.get("atol"), tol.get("rtol"))] += 1
        if server.get("version"):
            versions[server["version"]] += 1
        for g in server.get("gpus") or []:
            servers_gpus[g] += 1
        comp = _dict(_dict(r.get("reward")).get("torch_compile"))
        if comp.get("rescale"):
            baselines[(comp.get("stored_gpu"), comp["rescale"])] += 1
    keys = ("gpu", "driver", "cuda", "torch")
    return {
        "devices": [dict(zip(keys, k), episodes=n) for k, n in devices.most_common()],
        "server_gpus": sorted(servers_gpus),
        "kforge_versions": sorted(versions),
        "timing_methods": [{"method": m, "episodes": n} for m, n in methods.most_common()],
        "tolerances": [{"dtype": k[0], "atol": k[1], "rtol": k[2], "episodes": n} for k, n in sorted(
            tolerances.items(), key=lambda kv: str(kv[0]))],
        # The profile every task names (imported tasks carry one), else the shipped ones the tolerances match.
        "tolerance_profile": (", ".join(sorted(named)) if named and None not in named
                              else matching_profile(tolerances, eval_yaml)),
        "compile_baselines": [{"stored_gpu": k[0], "rescale": k[1], "episodes": n} for k, n in baselines.most_common()],
        # What the server held of the evaluated sources but did not serve (None: the rows do not say).
        # `level`: a benchmark's level (KernelBench's), where the server names one.
        "left_out": [{"source": k[0], "stage": k[1], "reason": k[2], "rows": n, **({"level": k[3]} if k[3] is not None else {})}
                     for k, n in sorted(left_out.items(), key=lambda kv: tuple(map(str, kv[0]))) if k[0] in sources]
        if told else None,
    }


def shipped_profiles(eval_yaml) -> dict[str, dict[str, tuple[float, float]]]:
    """precision.profiles of configs/eval.yaml: {profile: {dtype: (atol, rtol)}}; {} when unreadable."""
    try:
        import yaml
        with open(eval_yaml) as f:
            doc = yaml.safe_load(f)
        profiles = doc["precision"]["profiles"]
        return {name: {dt: (float(t["atol"]), float(t["rtol"])) for dt, t in p.items()} for name, p in profiles.items()}
    except Exception:  # noqa: BLE001 - no config at hand: the report names no profile
        return {}


def default_eval_yaml() -> str:
    root = os.environ.get("KFORGE_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", "..", "..", "..")
    return os.path.join(root, "configs", "eval.yaml")


def matching_profile(tolerances, eval_yaml=None) -> str | None:
    """The shipped precision profiles every task's (dtype, atol, rtol) agrees with; "task-specific"
    when some task carries a tolerance of its own; None when the rows record no tolerance."""
    if not tolerances:
        return None
    profiles = shipped_profiles(eval_yaml or default_eval_yaml())
    names = [name for name, per_dtype in profiles.items()
             if all(dt in per_dtype and per_dtype[dt] == (float(a), float(r)) for dt, a, r in tolerances)]
    return ", ".join(names) if names else "task-specific (no shipped profile matches every task)"
