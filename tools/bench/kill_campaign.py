"""kill -9 campaign (issue 26): no acknowledged trajectory is ever lost.

Runs the real `kforge serve` recording to one HDF5 file and, round after round, drives it with N
concurrent writers (scripted episodes through the Python client: reset, a write_file of random
size, then either a `close` or a last step that hits `max_turns`) and SIGKILLs it at a random
moment. An episode counts as acknowledged when the client got `ok` for the step or `close` that
ended it. Before each restart it notes whether the HDF5 file alone is readable (the rows of the
last round); after each restart (the server checks and repairs the file as it opens it) every
episode acknowledged in the last round must be in the file and decode; at the end, after a
graceful stop, every episode acknowledged in the whole campaign is read back.

    .venv/bin/python tools/bench/kill_campaign.py --kills 200 --writers 64 \
        --out tools/bench/results/2026-12-03_kill_campaign.json

No GPU is needed (the episodes never compile). Prints the figures; exits 1 when an acknowledged
trajectory is missing or unreadable.
"""
import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools", "python"))
sys.path.insert(0, HERE)
import h5py  # noqa: E402
import msgpack  # noqa: E402
from kforge_client import Client, KforgeError, ServerUnavailable  # noqa: E402

TASK = "softmax_rows"


def start_server(kforge, config, endpoint, log, counts):
    """`kforge serve`, listening; a start that fails is retried twice (counted: the binary may be
    relinked under a long campaign), then raised with the log's tail."""
    for attempt in range(3):
        proc = subprocess.Popen([kforge, "serve", "--config", config, "--bind", endpoint], stdout=subprocess.PIPE,
                                stderr=log, text=True)
        line = proc.stdout.readline()
        if line.startswith("kforge serve: listening on"):
            return proc
        proc.kill()
        proc.wait()
        counts["start_retries"] = counts.get("start_retries", 0) + 1
        time.sleep(3)
    log.flush()
    with open(log.name) as f:
        raise RuntimeError(f"kforge serve did not start: {line!r}; its log ends:\n{f.read()[-3000:]}")


def writer(endpoint, stop, acked, counts, rng):
    """Scripted episodes until `stop`; appends the id of every episode whose end was acknowledged."""
    c = Client(endpoint, timeout=2.0, retries=0, busy_timeout=1.0)
    try:
        while not stop.is_set():
            by_step = rng.random() < 0.5
            ep = None
            try:
                ep = c.reset(TASK, seed=rng.getrandbits(63), options={"max_turns": 2} if by_step else None)["episode"]
                content = "".join(rng.choice("abcdefghij\n") for _ in range(rng.choice([50, 2000, 8000])))
                c.step(ep, {"name": "write_file", "arguments": {"path": "notes.txt", "content": content}})
                if by_step:
                    r = c.step(ep, {"name": "list_files", "arguments": {}})
                    if r["terminated"] or r["truncated"]:
                        acked.append(ep)
                    c.close_episode(ep)
                else:
                    c.close_episode(ep)
                    acked.append(ep)
            except (KforgeError, ServerUnavailable) as e:
                counts[getattr(e, "kind", "unavailable")] = counts.get(getattr(e, "kind", "unavailable"), 0) + 1
                return  # the server is gone (or refused): this writer's round is over
    finally:
        c.close()


def h5_episodes(path, rows_from=0):
    """(episode ids of the index, episodes of rows >= rows_from that decode) read with h5py alone."""
    with h5py.File(path, "r", locking=False) as f:
        index = f["trajectories/index"][:]
        data = f["trajectories/data"]
        names = [bytes(r["episode"]).rstrip(b"\0").decode() for r in index]
        good = set()
        for r in index[rows_from:]:
            t = msgpack.unpackb(data[int(r["offset"]):int(r["offset"]) + int(r["length"])].tobytes(), raw=False)
            good.add(t["episode"])
        return names, good


def raw_check(path, rows_from):
    """True when the HDF5 file alone (before any repair) reads back the rows from rows_from."""
    try:
        h5_episodes(path, rows_from)
        return True
    except Exception:  # noqa: BLE001 - any failure of h5py or msgpack is what is counted
        return False


def write_config(work, fsync):
    path = os.path.join(work, "server.yaml")
    with open(path, "w") as f:
        f.write('{"scheduler": {"gpus": 0, "compile_workers": 1}, "sessions": {"idle_timeout_s": 60},'
                f' "record": {{"path": "{work}/trajectories.h5", "fsync": {"true" if fsync else "false"}}}}}\n')
    return path


def run_round(endpoint, writers, rng, kill_after, proc, log_counts):
    stop, acked = threading.Event(), []
    threads = [threading.Thread(target=writer, args=(endpoint, stop, acked, log_counts, random.Random(rng.getrandbits(64))))
               for _ in range(writers)]
    for t in threads:
        t.start()
    time.sleep(kill_after)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    stop.set()
    for t in threads:
        t.join()
    return list(acked)


def campaign(kforge, kills, writers, seed, work, fsync=True, progress=print):
    """Runs the campaign in `work`; returns the figures (a dict of numbers)."""
    rng = random.Random(seed)
    record = os.path.join(work, "trajectories.h5")
    config, endpoint = write_config(work, fsync), f"ipc://{work}/kforge.sock"
    log = open(os.path.join(work, "serve.log"), "a")
    acked_all, missing, unreadable, raw_bad, counts = [], [], [], 0, {}
    rows_before, started = 0, time.monotonic()
    proc = start_server(kforge, config, endpoint, log, counts)
    for k in range(kills):
        acked = run_round(endpoint, writers, rng, rng.uniform(0.2, 1.5), proc, counts)
        acked_all += acked
        if os.path.exists(record) and not raw_check(record, rows_before):
            raw_bad += 1
        proc = start_server(kforge, config, endpoint, log, counts)  # opening checks and repairs the file
        # The last round's acknowledged episodes were appended after the rows counted before it.
        names, good = h5_episodes(record, rows_before)
        have = set(names)
        missing += [e for e in acked if e not in have]
        unreadable += [e for e in acked if e in have and e not in good]
        rows_before = len(names)
        if progress and (k + 1) % max(1, kills // 10) == 0:
            progress(f"kill {k + 1}/{kills}: {len(acked_all)} acknowledged, {rows_before} recorded, "
                     f"{len(missing)} missing, {len(unreadable)} unreadable, {raw_bad} needed a repair")
    proc.send_signal(signal.SIGTERM)
    proc.wait(60)
    log.close()
    names, good = h5_episodes(record)
    final_lost = [e for e in acked_all if e not in good]
    with open(os.path.join(work, "serve.log")) as f:
        serve_log = f.read()
    return {
        "kills": kills,
        "writers": writers,
        "acknowledged_episodes": len(acked_all),
        "recorded_trajectories": len(names),
        "acknowledged_missing_after_restart": len(missing),
        "acknowledged_unreadable_after_restart": len(unreadable),
        "acknowledged_unreadable_final": len(final_lost),
        "h5_unreadable_before_repair": raw_bad,
        "h5_rebuilt_from_journal": serve_log.count("rebuilt from the journal"),
        "journal_torn_tails_cut": serve_log.count("torn tail"),
        "record_failed_replies": counts.get("record_failed", 0),
        "server_start_retries": counts.get("start_retries", 0),
        "wall_s": round(time.monotonic() - started, 1),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kills", type=int, default=200)
    ap.add_argument("--writers", type=int, default=64)
    ap.add_argument("--seed", type=int, default=26)
    ap.add_argument("--no-fsync", action="store_true", help="record.fsync false (a kill -9 does not need it)")
    ap.add_argument("--kforge", default=os.path.join(ROOT, "build", "tools", "kforge"))
    ap.add_argument("--out", help="results JSON (tools/bench/results_doc.py shape)")
    ap.add_argument("--date", default=time.strftime("%Y-%m-%d"), help="the record's date (default today)")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="kforge-kill-")  # kept when the campaign fails, for its serve.log
    figures = campaign(args.kforge, args.kills, args.writers, args.seed, work, fsync=not args.no_fsync)
    shutil.rmtree(work)
    for k, v in figures.items():
        print(f"{k}: {v}")
    if args.out:
        from results_doc import commit, write
        write(args.out, {"gpu": "none", "driver": "none", "cuda": "none", "torch": "none",
                         "date": args.date, "commit": commit(),
                         "command": " ".join(["tools/bench/kill_campaign.py"] + sys.argv[1:]),
                         "machine": f"{os.cpu_count()} CPU cores, no GPU", "figures": figures}, "kill_campaign")
    bad = figures["acknowledged_missing_after_restart"] + figures["acknowledged_unreadable_after_restart"] + \
        figures["acknowledged_unreadable_final"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
