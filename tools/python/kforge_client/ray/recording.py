"""The trajectory streams of many servers merged into one HDF5 file, with a `server` column.

The file is a kforge trajectory file (rollout/TRAJECTORY_FORMAT.md: `format = "kforge-trajectories"`,
`/trajectories/data` and `/trajectories/index`), so ``TrajectoryReader`` reads it; its index has one
more field, `server` (S64), and each trajectory map two more keys, `server` and `recorded_by`
(`server`: the trajectory as its server recorded it; `client`: the router's copy of what the server
answered, for an episode its server never delivered: `end_cause: server_lost`, or one that ended
on a server lost before its stream brought it).
"""
from __future__ import annotations

import queue
import threading
import time
from typing import Any

import h5py
import msgpack
import numpy as np
import zmq

INDEX_DTYPE = np.dtype([("offset", "<u8"), ("length", "<u8"), ("seed", "<u8"), ("gpu", "<i4"), ("turns", "<i4"),
                        ("episode_reward", "<f8"), ("started_unix", "<f8"), ("duration_s", "<f8"),
                        ("episode", "S64"), ("task", "S256"), ("termination_reason", "S32"), ("end_cause", "S32"),
                        ("server", "S64")])


class MergedFileWriter:
    """Appends trajectories (msgpack maps) to a kforge trajectory file with a `server` column.
    Not durable as the servers' own files are (no journal): each server also keeps its own."""

    def __init__(self, path: str, servers: list[str]) -> None:
        self.path = path
        self._f = h5py.File(path, "w")
        self._f.attrs["format"] = "kforge-trajectories"
        self._f.attrs["format_version"] = "1"
        self._f.attrs["payload"] = "msgpack"
        self._f.attrs["merged_from"] = ",".join(servers)
        g = self._f.create_group("trajectories")
        self._data = g.create_dataset("data", shape=(0,), maxshape=(None,), dtype="u1", chunks=(65536,),
                                      compression="gzip", compression_opts=1)
        self._index = g.create_dataset("index", shape=(0,), maxshape=(None,), dtype=INDEX_DTYPE, chunks=(64,))
        self.count = 0

    def append(self, trajectory: dict[str, Any], server: str, recorded_by: str) -> None:
        t = dict(trajectory, server=server, recorded_by=recorded_by)
        raw = np.frombuffer(msgpack.packb(t, use_bin_type=True), dtype="u1")
        offset = self._data.shape[0]
        self._data.resize((offset + len(raw),))
        self._data[offset:] = raw
        row = np.zeros(1, INDEX_DTYPE)[0]
        row["offset"], row["length"] = offset, len(raw)
        row["seed"] = t.get("seed") or 0
        row["gpu"] = t["gpu"] if t.get("gpu") is not None else -1
        row["turns"] = len(t.get("turns", []))
        row["episode_reward"] = t.get("episode_reward") or 0.0
        row["started_unix"] = t.get("started_unix") or 0.0
        row["duration_s"] = t.get("duration_s") or 0.0
        for key, size in (("episode", 64), ("task", 256), ("termination_reason", 32), ("end_cause", 32)):
            row[key] = (t.get(key) or "").encode()[:size]
        row["server"] = server.encode()[:64]
        self._index.resize((self.count + 1,))
        self._index[self.count] = row
        self.count += 1
        self._f.flush()

    def close(self) -> None:
        self._f.close()


class MergedRecording:
    """Pulls every server's trajectory stream (one PULL socket each) on a thread of its own and
    writes one file. The router hands it its copy of each episode that ended (``ended``) and of each
    one its server lost (``lost``); a copy is written only when the server's own trajectory did not
    come: an ended episode's copy waits for its server's, and is written when that server is lost
    (after its socket is drained) or at ``close`` after ``wait_s``."""

    def __init__(self, path: str, servers: dict[str, str], drain_s: float = 0.5) -> None:
        """``servers``: name -> stream endpoint."""
        self.path = path
        self.drain_s = drain_s
        self._writer = MergedFileWriter(path, list(servers))
        self._ctx = zmq.Context.instance()
        self._socks: dict[str, zmq.Socket] = {}
        for name, endpoint in servers.items():
            s = self._ctx.socket(zmq.PULL)
            s.setsockopt(zmq.LINGER, 0)
            s.connect(endpoint)
            self._socks[name] = s
        self._commands: queue.SimpleQueue = queue.SimpleQueue()
        self._waiting: dict[str, dict[str, dict[str, Any]]] = {name: {} for name in servers}  # server -> episode -> copy
        self._seen: set[str] = set()
        self._stop = threading.Event()
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="kforge-merged-recording", daemon=True)
        self._thread.start()

    # Called from the router's thread: everything goes through the command queue.
    def ended(self, server: str, trajectory: dict[str, Any]) -> None:
        self._commands.put(("ended", server, trajectory))

    def lost(self, server: str, trajectories: list[dict[str, Any]]) -> None:
        self._commands.put(("lost", server, trajectories))

    @property
    def count(self) -> int:
        return self._writer.count

    def close(self, wait_s: float = 10.0) -> None:
        """Waits up to ``wait_s`` for the servers' trajectories of the episodes that ended, writes the
        router's copies of any still missing, and closes the file."""
        done = threading.Event()
        self._commands.put(("close", wait_s, done))
        done.wait(wait_s + 30)
        self._stop.set()
        self._thread.join(30)
        if self.error is not None:
            raise self.error

    def _run(self):
        poller = zmq.Poller()
        names = {s: n for n, s in self._socks.items()}
        for s in self._socks.values():
            poller.register(s, zmq.POLLIN)
        try:
            while not self._stop.is_set():
                for sock, _ in poller.poll(50):
                    self._take(names[sock], sock.recv())
                while not self._commands.empty():
                    self._command(poller, names, *self._commands.get())
        except BaseException as e:  # noqa: BLE001 - kept for close() to raise
            self.error = e
        finally:
            for s in self._socks.values():
                s.close(linger=0)
            self._writer.close()

    def _take(self, server, payload):
        t = msgpack.unpackb(payload, raw=False)
        self._waiting[server].pop(t.get("episode"), None)
        if t.get("episode") in self._seen:  # its copy was written already (it came after close's wait)
            return
        self._seen.add(t.get("episode"))
        self._writer.append(t, server, "server")

    def _drain(self, poller, names, until):
        while time.monotonic() < until:
            ready = poller.poll(20)
            for sock, _ in ready:
                self._take(names[sock], sock.recv())
            if not ready and not any(self._waiting.values()):
                return

    def _command(self, poller, names, kind, *args):
        if kind == "ended":
            server, t = args
            if t["episode"] not in self._seen:
                self._waiting[server][t["episode"]] = t
        elif kind == "lost":
            server, open_ones = args
            self._drain(poller, names, time.monotonic() + self.drain_s)
            for t in list(self._waiting[server].values()) + open_ones:
                if t["episode"] not in self._seen:
                    self._seen.add(t["episode"])
                    self._writer.append(t, server, "client")
            self._waiting[server].clear()
            if self._socks[server] in names:
                poller.unregister(self._socks[server])
                del names[self._socks[server]]
        elif kind == "close":
            wait_s, done = args
            self._drain(poller, names, time.monotonic() + wait_s)
            for server, waiting in self._waiting.items():
                for t in waiting.values():
                    self._writer.append(t, server, "client")
                waiting.clear()
            done.set()
            self._stop.set()
