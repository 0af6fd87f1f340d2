"""One `kforge serve` per judging node of a Ray cluster: the resource shape a server reserves, the
placement group that reserves it on one node, and the actor that owns the server process."""
from __future__ import annotations

import ctypes
import json
import os
import re
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ray
from ray.util.placement_group import placement_group, remove_placement_group
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

# The label every raylet carries (Ray >= 2.46): a placement group's bundle selects its node by it.
NODE_ID_LABEL = "ray.io/node-id"

# Server config keys holding paths, resolved against the base config's folder as `kforge serve` does
# (rollout/server_config.cpp), so that the config an actor writes elsewhere means the same files.
_PATH_KEYS = ("env_config", "reward_config", "eval_config", "anticheat_config")
_PATH_LISTS = (("tasks", "dirs"), ("tasks", "datasets"))

_LISTENING = re.compile(r"^kforge serve: listening on (\S+) .*trajectories pushed on (\S+?)[,)]")


@dataclass
class ServerShape:
    """What one server reserves on its node, as one placement-group bundle.

    ``gpus``: "all" (every GPU of the node: the default, one server per GPU node) or a count; 0 on a
    CPU-only cluster. ``cpus``: "all" or a count (at least 1). ``resources``: custom resources the bundle
    also takes (``{"kforge_judge": 1}`` with ``ray start --resources '{"kforge_judge": 1}'`` on the judging
    nodes): a node is a judging node when its totals cover the whole bundle, so with ``gpus=0`` a custom
    resource is what picks the nodes.
    """
    gpus: int | str = "all"
    cpus: int | str = "all"
    resources: dict[str, float] = field(default_factory=dict)

    def bundle_for(self, node_resources: dict[str, float]) -> dict[str, float] | None:
        """The bundle this shape reserves on a node with these total resources, or None when the node
        cannot hold it (no GPU for gpus="all", fewer CPUs or GPUs than asked, a custom resource missing)."""
        gpus = node_resources.get("GPU", 0) if self.gpus == "all" else self.gpus
        cpus = node_resources.get("CPU", 0) if self.cpus == "all" else self.cpus
        if self.gpus == "all" and gpus < 1:
            return None
        bundle = {"CPU": float(cpus), **({"GPU": float(gpus)} if gpus else {}), **self.resources}
        if cpus < 1 or any(node_resources.get(k, 0) < v for k, v in bundle.items()):
            return None
        return bundle


@dataclass
class ServerInfo:
    """One started server: picklable, so a router can be built in any process of the cluster."""
    name: str
    node_id: str
    endpoint: str
    stream: str
    record: str | None
    bundle: dict[str, float]
    pid: int  # of `kforge serve`, on its node
    actor: Any = None  # the ServerProcess actor handle


def judging_nodes(shape: ServerShape) -> list[tuple[str, dict[str, float]]]:
    """(node id, bundle) of every alive node that can hold ``shape``, in node-id order."""
    nodes = []
    for n in ray.nodes():
        if n.get("Alive"):
            bundle = shape.bundle_for(n.get("Resources", {}))
            if bundle is not None:
                nodes.append((n["NodeID"], bundle))
    return sorted(nodes)


def server_config(base: str | os.PathLike | None, overrides: dict[str, Any] | None) -> dict[str, Any]:
    """The config a server is started with: ``base`` (a server.yaml, its relative paths made absolute
    against its folder) with ``overrides`` (sections merged key by key) on top."""
    config: dict[str, Any] = {}
    if base is not None:
        import yaml
        folder = Path(base).resolve().parent
        config = yaml.safe_load(Path(base).read_text()) or {}
        absolute = lambda p: p if not p or os.path.isabs(p) else str(folder / p)  # noqa: E731
        for key in _PATH_KEYS:
            if key in config:
                config[key] = absolute(config[key])
        for section, key in _PATH_LISTS:
            if key in config.get(section, {}):
                config[section][key] = [absolute(p) for p in config[section][key]]
        config.get("record", {}).pop("path", None)  # each server records to its own file
    for key, value in (overrides or {}).items():
        if isinstance(value, dict):
            config.setdefault(key, {}).update(value)
        else:
            config[key] = value
    return config


def _die_with_parent():
    # PR_SET_PDEATHSIG: the server gets SIGKILL when the thread that started it ends, which is the
    # actor's keeper thread, alive until the actor process dies (a node lost, an actor killed).
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)


class ServerProcess:
    """The Ray actor that owns one `kforge serve` on its node (``ray.remote`` is applied at start).

    The server binds a free port of the node's address for requests and one for its trajectory
    stream (``tcp://IP:*``), records to ``workdir/NAME.h5`` on the node, and dies with the actor.
    """

    def __init__(self, name: str, kforge_bin: str, config: dict[str, Any], workdir: str, compile_workers: int,
                 start_timeout: float = 60.0) -> None:
        self.name = name
        host = ray.util.get_node_ip_address()
        os.makedirs(workdir, exist_ok=True)
        config = json.loads(json.dumps(config))
        config.setdefault("scheduler", {}).setdefault("compile_workers", compile_workers)
        config.setdefault("stream", {})["bind"] = f"tcp://{host}:*"
        self.record = os.path.join(workdir, f"{name}.h5")
        config_path = os.path.join(workdir, f"{name}.yaml")
        Path(config_path).write_text(json.dumps(config))  # JSON is YAML
        self.log_path = os.path.join(workdir, f"{name}.log")
        argv = [kforge_bin, "serve", "--config", config_path, "--bind", f"tcp://{host}:*", "--record", self.record]
        started = threading.Event()
        self._proc: subprocess.Popen | None = None
        self._start_error: BaseException | None = None

        def keep():
            try:
                with open(self.log_path, "a") as log:
                    self._proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log, text=True,
                                                  preexec_fn=_die_with_parent)
            except BaseException as e:  # noqa: BLE001 - handed to __init__ to raise
                self._start_error = e
            started.set()
            if self._proc is not None:
                self._proc.wait()

        self._keeper = threading.Thread(target=keep, name=f"kforge-serve-{name}", daemon=True)
        self._keeper.start()
        started.wait(start_timeout)
        if self._proc is None:
            raise RuntimeError(f"{name}: could not start {kforge_bin}: {self._start_error}")
        self.line = self._proc.stdout.readline()
        m = _LISTENING.match(self.line)
        if not m:
            self._proc.kill()
            raise RuntimeError(f"{name}: kforge serve did not start: {self.line.strip() or self._log_tail()}")
        self.endpoint, self.stream = m.group(1), m.group(2)

    def _log_tail(self) -> str:
        return Path(self.log_path).read_text()[-2000:]

    def info(self) -> dict[str, Any]:
        return {"name": self.name, "node_id": ray.get_runtime_context().get_node_id(), "endpoint": self.endpoint,
                "stream": self.stream, "record": self.record, "pid": self._proc.pid, "line": self.line.strip()}

    def alive(self) -> bool:
        return self._proc.poll() is None

    def stop(self, timeout: float = 60.0) -> int | None:
        """SIGTERM (open episodes recorded, `end_cause: shutdown`); the exit status, or None if it outlived ``timeout``."""
        if self._proc.poll() is None:
            self._proc.send_signal(signal.SIGTERM)
        try:
            return self._proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None


class ServerFleet:
    """``ServerFleet.start(kforge_bin, config=..., shape=...)``: one `kforge serve` per judging node,
    each in a placement group that reserves ``shape`` on that node; ``servers`` lists them
    (``ServerInfo``, for ``Router``); ``shutdown()`` stops them and gives the reservations back."""

    def __init__(self, servers: list[ServerInfo], groups: list[Any]) -> None:
        self.servers = servers
        self._groups = groups

    @classmethod
    def start(cls, kforge_bin: str, config: str | os.PathLike | None = None, overrides: dict[str, Any] | None = None,
              shape: ServerShape | None = None, workdir: str = "/tmp/kforge-ray", max_servers: int | None = None,
              timeout: float = 120.0) -> ServerFleet:
        shape = shape or ServerShape()
        nodes = judging_nodes(shape)[:max_servers]
        if not nodes:
            raise RuntimeError(f"no alive Ray node can hold a kforge server of shape {shape} "
                               f"(nodes: {[n.get('Resources') for n in ray.nodes() if n.get('Alive')]})")
        base = server_config(config, overrides)
        groups, actors = [], []
        try:
            for node_id, bundle in nodes:
                groups.append(placement_group([bundle], strategy="STRICT_PACK", name=f"kforge-serve-{node_id[:12]}",
                                              bundle_label_selector=[{NODE_ID_LABEL: node_id}]))
            ray.get([g.ready() for g in groups], timeout=timeout)
            for i, ((node_id, bundle), group) in enumerate(zip(nodes, groups)):
                extra = {k: v for k, v in bundle.items() if k not in ("CPU", "GPU")}
                actor = ray.remote(ServerProcess).options(
                    num_cpus=bundle["CPU"], num_gpus=bundle.get("GPU", 0), resources=extra or None, max_restarts=0,
                    scheduling_strategy=PlacementGroupSchedulingStrategy(group, placement_group_bundle_index=0),
                ).remote(f"server-{i}", kforge_bin, base, workdir, max(1, int(bundle["CPU"]) - 1))
                actors.append((actor, bundle))
            infos = ray.get([a.info.remote() for a, _ in actors], timeout=timeout)
        except BaseException:
            for a, _ in actors:
                ray.kill(a)
            for g in groups:
                remove_placement_group(g)
            raise
        servers = [ServerInfo(i["name"], i["node_id"], i["endpoint"], i["stream"], i["record"], b, i["pid"], a)
                   for i, (a, b) in zip(infos, actors)]
        return cls(servers, groups)

    def shutdown(self, timeout: float = 60.0) -> None:
        """Stops every server still alive (SIGTERM: open episodes recorded), then frees the reservations."""
        waits = []
        for s in self.servers:
            try:
                waits.append(s.actor.stop.remote(timeout))
            except Exception:  # noqa: BLE001 - an actor already gone has nothing to stop
                pass
        deadline = time.monotonic() + timeout
        for w in waits:
            try:
                ray.get(w, timeout=max(0.1, deadline - time.monotonic()))
            except Exception:  # noqa: BLE001 - a lost node: its server died with it
                pass
        for s in self.servers:
            ray.kill(s.actor)
        for g in self._groups:
            remove_placement_group(g)
