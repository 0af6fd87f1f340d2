"""The driver: one timing process per GPU of the Ray cluster, the rows handed out by task id, the
rows collected into part files keyed by GPU model, torch and CUDA version, progress and a summary.

- **Placement.** Per alive node with the resource (`GPU`, or a custom one on a CPU-only cluster), one
  placement group (`STRICT_PACK`, pinned to the node by its `ray.io/node-id` label) of one bundle per
  timing process: one unit of the resource and the node's CPUs shared out evenly (the stage's compile
  workers run on them). One `StageProcess` actor per bundle (worker.py), no restarts.
- **The key.** Each process first reports the environment the stage records (GPU name, torch, CUDA);
  its rows go to `OUT/<key>/` (keys.py). Processes of different GPU models each measure every row.
- **The work.** The rows of the run (the dataset's, or `--ids`), less those already in the key's part
  files (same id and graph hash), at most `--limit`, in dataset order, cut into
  `--chunks-per-process` contiguous chunks per process of the key. A free process takes the next
  chunk and runs the stage on exactly those ids.
- **Collection.** Every `poll_s` the driver reads back each process's new rows and appends them,
  line for line and fsync'ed, to `OUT/<key>/part-<slot>.jsonl`. A row is written once per key: a
  rerun skips every row already there, as the stage itself does.
- **Losses.** A process whose actor dies (its node lost, the process killed) loses the rows it had
  not handed back; they go back to the queue, split over the key's live processes, in the same run.
  A stage that exits with an error retires its process after the second time, its rows requeued. An
  id is handed out at most `MAX_ATTEMPTS` times per run; what is left after that a rerun redoes."""
import collections
import json
import os
import sys
import time

import ray
from ray.exceptions import GetTimeoutError, RayError
from ray.util.placement_group import placement_group, remove_placement_group
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

from synth_gpu import InputError, PartWriter, read_records
from synth_gpu.common import duration

from . import worker as worker_mod
from .keys import key_of

NODE_ID_LABEL = "ray.io/node-id"
MAX_ATTEMPTS = 3
# Issue 32's goal: the 6 900-row stage within (2.56 h / GPUs) x 1.1; the shipped run's rate on one H200.
GOAL_ROWS, SHIPPED_GPU_HOURS, GOAL_SLACK, SHIPPED_ROWS_PER_GPU_HOUR = 6900, 2.56, 1.1, 2698.0


def log(msg):
    print(f"baseline_ray: {msg}", file=sys.stderr, flush=True)


class LineWriter(PartWriter):
    """A part file (torn last line cut off first), appended one row at a time as the stage wrote it."""

    def write_line(self, line):
        self.f.write(line.rstrip("\n") + "\n")
        self.f.flush()
        os.fsync(self.f.fileno())


class Proc:
    """One timing process as the driver sees it."""

    def __init__(self, slot, node_id, actor, group):
        self.slot, self.node_id, self.actor, self.group = slot, node_id, actor, group
        self.info, self.key, self.error = {}, None, None
        self.alive, self.busy, self.ref = True, False, None
        self.chunk, self.got = [], set()
        self.rows, self.failures, self.chunks = 0, 0, 0
        self.busy_since, self.busy_s, self.stage_pid, self.last = None, 0.0, None, ""

    def gpu_s(self, now):
        return self.busy_s + (now - self.busy_since if self.busy and self.busy_since else 0.0)

    def stop_clock(self, now):
        if self.busy_since is not None:
            self.busy_s += now - self.busy_since
        self.busy_since = None

    def state(self, now):
        return {"slot": self.slot, "node_id": self.node_id, "host": self.info.get("host"), "pid": self.info.get("pid"),
                "stage_pid": self.stage_pid, "gpu_ids": self.info.get("gpu_ids"), "cpus": self.info.get("cpus"),
                "key": self.key, "alive": self.alive, "busy": self.busy, "chunks": self.chunks, "rows": self.rows,
                "gpu_s": round(self.gpu_s(now), 1), "error": self.error, "last": self.last}


def plan_nodes(resource, per_node):
    """[(node id, processes, CPUs each)] for every alive node with at least one unit of `resource`."""
    plan = []
    for n in ray.nodes():
        res = n.get("Resources", {})
        units = int(res.get(resource, 0) + 1e-9)
        if n.get("Alive") and units >= 1:
            k = min(units, per_node) if per_node else units
            plan.append((n["NodeID"], k, int(res.get("CPU", 0)) // k))
    return sorted(plan)


class Driver:
    def __init__(self, a, settings, tasks):
        self.a, self.settings, self.tasks = a, settings, tasks
        self.by_id = {t["id"]: t for t in tasks}
        self.procs, self.groups, self.writers = [], [], {}
        self.keys = {}  # key -> {"done": set of (id, graph_hash), "queue": deque, "before", "todo", "rows"}
        self.attempts = collections.Counter()
        self.t_start, self.t0 = time.monotonic(), None
        self.deadline = self.t_start + a.time_budget_s if a.time_budget_s else None
        self.chunk_no, self.dups, self.last_progress = 0, 0, 0.0
        self.summary_path = a.summary or os.path.join(a.out, "baseline_ray_summary.json")

    # -- placement ------------------------------------------------------------------------------
    def place(self):
        a = self.a
        plan = plan_nodes(a.resource, a.gpus_per_node)
        if not plan:
            raise InputError(f"no alive Ray node has a '{a.resource}' resource (nodes: "
                             f"{[n.get('Resources') for n in ray.nodes() if n.get('Alive')]})")
        ray.cloudpickle.register_pickle_by_value(worker_mod)  # the nodes need the checkout, not this package
        remote = ray.remote(worker_mod.StageProcess)
        for node_id, k, cpus in plan:
            bundle = {a.resource: 1.0, **({"CPU": float(cpus)} if cpus else {})}
            self.groups.append(placement_group([bundle] * k, strategy="STRICT_PACK", name=f"kforge-baseline-{node_id[:12]}",
                                               bundle_label_selector=[{NODE_ID_LABEL: node_id}] * k))
        try:
            ray.get([g.ready() for g in self.groups], timeout=a.placement_timeout_s)
        except GetTimeoutError:
            raise InputError(f"the GPU reservations were not placed within {a.placement_timeout_s:g} s: another job (a "
                             "serving fleet, a trainer) holds the nodes' resources") from None
        self.t0 = time.monotonic()
        for (node_id, k, cpus), group in zip(plan, self.groups):
            for i in range(k):
                opts = dict(num_cpus=cpus, max_restarts=0, max_task_retries=0,
                            scheduling_strategy=PlacementGroupSchedulingStrategy(group, placement_group_bundle_index=i))
                opts.update(num_gpus=1) if a.resource == "GPU" else opts.update(resources={a.resource: 1})
                slot = len(self.procs)
                actor = remote.options(**opts).remote(slot, a.root, a.python, os.path.abspath(a.dataset), a.device,
                                                      a.workdir, (i, k) if a.pin else None)
                self.procs.append(Proc(slot, node_id, actor, (i, k)))
        infos = ray.get([p.actor.info.remote() for p in self.procs], timeout=a.placement_timeout_s)
        for p, info in zip(self.procs, infos):
            p.info = info
            if info.get("error"):
                p.alive, p.error = False, info["error"]
                log(f"process {p.slot} on {info.get('host')}: {info['error']}")
                continue
            p.key = key_of(info["env"])
        live = [p for p in self.procs if p.alive]
        if not live:
            raise InputError("no timing process could start: " + "; ".join(str(p.error) for p in self.procs))
        log(f"{len(live)} timing process(es) on {len({p.node_id for p in live})} node(s) "
            f"({a.resource} x1 each, device {a.device}): " + ", ".join(
                f"{p.slot}@{p.info['host']}[{','.join(p.info['gpu_ids']) or a.resource}] {p.key}" for p in live))

    # -- the work -------------------------------------------------------------------------------
    def key_state(self, key):
        if key not in self.keys:
            d = os.path.join(self.a.out, key)
            done = {(r["id"], r.get("graph_hash")) for r in read_records(d)} if os.path.isdir(d) else set()
            self.keys[key] = {"done": done, "queue": collections.deque(), "before": 0, "todo": 0, "rows": 0}
        return self.keys[key]

    def plan_work(self):
        by_key = collections.defaultdict(list)
        for p in self.procs:
            if p.alive:
                by_key[p.key].append(p)
        for key, procs in by_key.items():
            ks = self.key_state(key)
            todo = [t["id"] for t in self.tasks if (t["id"], t["graph_hash"]) not in ks["done"]]
            ks["before"] = len(self.tasks) - len(todo)
            if self.a.limit is not None:
                todo = todo[:self.a.limit]
            ks["todo"] = len(todo)
            n = max(1, min(len(todo), len(procs) * self.a.chunks_per_process))
            for i in range(n):
                piece = todo[i * len(todo) // n:(i + 1) * len(todo) // n]
                if piece:
                    ks["queue"].append(piece)
            log(f"{key}: {len(self.tasks)} row(s) in this run's list, {ks['before']} already written, {len(todo)} to do "
                f"on {len(procs)} process(es) in {len(ks['queue'])} chunk(s)")

    def requeue(self, key, ids):
        ids = [i for i in ids if self.attempts[i] < MAX_ATTEMPTS]
        live = [p for p in self.procs if p.alive and p.key == key]
        if not ids or not live:
            return
        n = min(len(ids), len(live))
        q = self.keys[key]["queue"]
        for i in reversed(range(n)):
            q.appendleft(ids[i * len(ids) // n:(i + 1) * len(ids) // n])

    def remaining_s(self):
        return None if self.deadline is None else self.deadline - time.monotonic()

    def assign(self, p):
        q = self.keys[p.key]["queue"]
        left = self.remaining_s()
        if not q or (left is not None and left <= 0):
            return False
        ids = q.popleft()
        self.attempts.update(ids)
        self.chunk_no += 1
        p.chunk, p.got, p.busy, p.busy_since = ids, set(), True, time.monotonic()
        try:
            started = ray.get(p.actor.start.remote(self.chunk_no, self.settings, [self.by_id[i] for i in ids],
                                                   self.a.stage_args, left), timeout=120)
        except (RayError, GetTimeoutError) as e:
            self.lost(p, e)
            return True
        if not started:  # its last stage still runs (cannot happen: a chunk ends when its stage has exited)
            p.busy, p.chunk = False, []
            p.stop_clock(time.monotonic())
            self.keys[p.key]["queue"].appendleft(ids)
            return False
        p.chunks += 1
        return True

    # -- collection -----------------------------------------------------------------------------
    def writer(self, key, slot):
        if (key, slot) not in self.writers:
            self.writers[(key, slot)] = LineWriter(os.path.join(self.a.out, key, f"part-{slot}.jsonl"))
        return self.writers[(key, slot)]

    def collect(self, p, res):
        p.stage_pid, p.last = res.get("stage_pid"), res.get("last") or p.last
        for line in res["lines"]:
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if not isinstance(rec, dict) or "id" not in rec or "status" not in rec:
                continue
            key = key_of(rec.get("env") or {})
            if key != p.key:
                log(f"process {p.slot}: a row of {rec['id']} measured as {key}, not {p.key}: kept under its own key")
            ks = self.key_state(key)
            ident = (rec["id"], rec.get("graph_hash"))
            p.got.add(rec["id"])
            if ident in ks["done"]:
                self.dups += 1  # measured twice (a chunk redone after a loss): the first row stays
                continue
            self.writer(key, p.slot).write_line(line)
            ks["done"].add(ident)
            ks["rows"] += 1
            p.rows += 1
        if p.busy and not res["running"] and res["rc"] is not None:
            self.chunk_ended(p, res["rc"])

    def chunk_ended(self, p, rc):
        left = [i for i in p.chunk if i not in p.got]
        p.busy, p.chunk = False, []
        p.stop_clock(time.monotonic())
        if rc == 0:
            budget_out = self.remaining_s() is not None and self.remaining_s() < 60
            if left and not budget_out:
                self.requeue(p.key, left)
            return
        p.failures += 1
        try:
            tail = "\n  ".join(ray.get(p.actor.tail.remote(), timeout=60).splitlines())
        except (RayError, GetTimeoutError):
            tail = ""
        log(f"process {p.slot} on {p.info.get('host')}: the stage exited with {rc} ({len(left)} row(s) of its chunk not "
            f"written{'; process retired' if p.failures >= 2 else ''}):\n  {tail}")
        if p.failures >= 2:
            p.alive, p.error = False, f"the stage exited with {rc} twice"
        self.requeue(p.key, left)

    def lost(self, p, e):
        left = [i for i in p.chunk if i not in p.got]
        p.stop_clock(time.monotonic())
        p.alive, p.busy, p.chunk, p.ref = False, False, [], None
        p.error = f"lost: {type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"[:300]
        log(f"process {p.slot} on {p.info.get('host')} lost ({p.error}); {len(left)} row(s) of its chunk go back to the queue")
        self.requeue(p.key, left)

    def poll_round(self):
        busy = [p for p in self.procs if p.alive and p.busy]
        for p in busy:
            if p.ref is None:
                p.ref = p.actor.poll.remote()
        refs = {p.ref: p for p in busy}
        ready, _ = ray.wait(list(refs), num_returns=len(refs), timeout=self.a.poll_s) if refs else ([], [])
        for ref in ready:
            p = refs[ref]
            p.ref = None
            try:
                res = ray.get(ref)
            except RayError as e:
                self.lost(p, e)
                continue
            self.collect(p, res)

    def run(self):
        self.plan_work()
        while True:
            t = time.monotonic()
            for p in self.procs:
                if p.alive and not p.busy:
                    self.assign(p)
            if not any(p.alive and p.busy for p in self.procs):
                break
            self.poll_round()
            if time.monotonic() - self.last_progress >= self.a.progress_s:
                self.progress()
            time.sleep(max(0.0, self.a.poll_s - (time.monotonic() - t)))
        return self.finish()

    # -- progress and the summary ---------------------------------------------------------------
    def figures(self, now):
        live_keys = {p.key for p in self.procs if p.key}
        keys = {}
        for key in sorted(live_keys):
            ks = self.key_state(key)
            procs = [p for p in self.procs if p.key == key]
            gpu_h = sum(p.gpu_s(now) for p in procs) / 3600
            rate = ks["rows"] / gpu_h if gpu_h > 0 else None
            in_flight = sum(len(p.chunk) - len(p.got) for p in procs if p.busy)
            queued = sum(len(c) for c in ks["queue"])
            n_gpus = len(procs)
            keys[key] = {
                "rows": len(self.tasks), "written_before": ks["before"], "to_do": ks["todo"], "rows_this_run": ks["rows"],
                "written": sum(1 for t in self.tasks if (t["id"], t["graph_hash"]) in ks["done"]),
                "queued": queued, "in_flight": in_flight, "processes": n_gpus,
                "processes_alive": sum(1 for p in procs if p.alive), "nodes": len({p.node_id for p in procs}),
                "gpu_hours": round(gpu_h, 4), "rows_per_gpu_hour": round(rate, 1) if rate else None,
                # Per GPU held from the reservation on (start-up, the environment probe, idle tails included).
                "rows_per_gpu_hour_held": round(ks["rows"] * 3600 / (n_gpus * (now - self.t0)), 1) if self.t0 and now > self.t0 else None,
                "goal": {"rows": GOAL_ROWS, "goal_wall_h": round(SHIPPED_GPU_HOURS / n_gpus * GOAL_SLACK, 3),
                         "projected_wall_h": round(GOAL_ROWS / (rate * n_gpus), 3) if rate else None,
                         "vs_shipped_rows_per_gpu_hour": round(rate / SHIPPED_ROWS_PER_GPU_HOUR, 3) if rate else None},
            }
        return keys

    def progress(self, final=False):
        now = time.monotonic()
        self.last_progress = now
        for key, k in self.figures(now).items():
            elapsed = now - (self.t0 or self.t_start)
            rate_wall = k["rows_this_run"] / elapsed if elapsed > 0 else 0
            left = k["queued"] + k["in_flight"]
            log(f"{key}: {k['written']}/{k['rows']} rows (+{k['rows_this_run']} this run), {left} left "
                f"({k['in_flight']} in flight), {k['processes_alive']}/{k['processes']} GPU process(es), "
                f"{k['rows_per_gpu_hour'] or 0:.0f} rows/GPU-h, elapsed {duration(elapsed)}"
                + (f", ~{duration(left / rate_wall)} left" if rate_wall > 0 and not final else ""))
        self.write_summary(final)

    def write_summary(self, final):
        now = time.monotonic()
        doc = {"finished": final, "dataset": os.path.abspath(self.a.dataset), "out": os.path.abspath(self.a.out),
               "device": self.a.device, "resource": self.a.resource, "wall_s": round(now - self.t_start, 1),
               "measuring_s": round(now - self.t0, 1) if self.t0 else 0.0, "time_budget_s": self.a.time_budget_s,
               "limit": self.a.limit, "stage_args": self.a.stage_args, "duplicates_dropped": self.dups,
               "keys": self.figures(now), "processes": [p.state(now) for p in self.procs]}
        tmp = self.summary_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")
        os.replace(tmp, self.summary_path)
        return doc

    def finish(self):
        self.progress(final=True)
        doc = self.write_summary(True)
        left = 0
        for key, k in doc["keys"].items():
            left_k = max(0, k["written_before"] + k["to_do"] - k["written"])  # of this run's rows (after --limit)
            left += left_k
            g = k["goal"]
            log(f"done: {key}: {k['rows_this_run']} row(s) this run on {k['processes']} GPU process(es), {k['nodes']} "
                f"node(s), in {doc['wall_s']:.0f} s ({k['gpu_hours'] * 3600:.0f} GPU-s): "
                f"{k['rows_per_gpu_hour'] or 0:.0f} rows/GPU-h; {k['written']}/{k['rows']} written, {left_k} left"
                + (f"; {GOAL_ROWS} rows would take {g['projected_wall_h']:.2f} h against the goal's {g['goal_wall_h']:.2f} h"
                   if g["projected_wall_h"] else "") + f"; summary {self.summary_path}")
        budget_out = self.remaining_s() is not None and self.remaining_s() <= 60
        return 0 if left == 0 or budget_out else 2  # 2: rows left by lost or failing processes (a rerun redoes them)

    def shutdown(self):
        """Stops what still runs (an interrupted driver), keeping the rows it wrote; frees the reservations."""
        for p in self.procs:
            if p.alive and p.busy:
                try:
                    self.collect(p, ray.get(p.actor.stop.remote(), timeout=60))
                except (RayError, GetTimeoutError):
                    pass
            ray.kill(p.actor)
        for w in self.writers.values():
            w.close()
        for g in self.groups:
            remove_placement_group(g)
