"""The trainer's one handle over many servers: new episodes go to the healthy server with the most
free episode slots; a server found lost ends its episodes with `end_cause: server_lost`, keeping
what it answered, and gets no new ones."""
from __future__ import annotations

import asyncio
import time
from typing import Any, Self

from ..async_client import AsyncClient
from ..errors import KforgeError, ServerUnavailable
from .servers import ServerInfo

END_CAUSE_SERVER_LOST = "server_lost"


class ServerLost(KforgeError):
    """The episode's server was lost (its actor or node died, or it stopped answering ``health``).
    The episode is over: ``trajectory`` is the router's copy of it up to its last answered turn, as
    recorded with ``end_cause: server_lost``."""

    def __init__(self, server: str, episode: str, reason: str, trajectory: dict[str, Any]) -> None:
        super().__init__(END_CAUSE_SERVER_LOST, f"episode {episode}: server {server} was lost ({reason}); "
                                                f"{len(trajectory['turns'])} answered turn(s) kept")
        self.server = server
        self.trajectory = trajectory


class _Server:
    """The router's view of one server: its clients, last health, episodes, and whether it is lost."""

    def __init__(self, info: ServerInfo, client_kwargs: dict[str, Any]) -> None:
        self.info = info
        self.name = info.name
        self.client = AsyncClient(info.endpoint, **client_kwargs)
        # health has a socket of its own: a health reply lost on the episodes' socket would replace
        # that socket, and every step in flight on it would be lost with it (AsyncClient).
        self.prober = AsyncClient(info.endpoint, retries=0)
        self.health: dict[str, Any] | None = None
        self.failures = 0
        self.placed = 0  # episodes placed here since the last health reply
        self.episodes: dict[str, RoutedEpisode] = {}
        self.lost_reason: str | None = None
        self.lost_event = asyncio.Event()

    def free(self) -> int:
        """Free episode slots: the server's own count (``health``) less what this router placed since."""
        if self.health is None:
            return 0
        e = self.health["episodes"]
        return e["max"] - e["open"] - self.placed

    def routable(self) -> bool:
        return self.lost_reason is None and self.health is not None and self.health.get("status") == "ok"


class Router:
    """``async with Router(fleet.servers, recording=rec) as r: ep = await r.reset(task)``.

    Placement: the routable server (not lost, last ``health`` status ``ok``) with the most free
    episode slots (``health.episodes``: max less open, less the episodes placed here since that
    reply), ties to the one with the fewest steps in flight. ``health`` is polled every
    ``health_interval`` s on a socket of its own. A server is lost when its actor is dead, or after
    ``max_health_failures`` health calls in a row got no reply within ``health_timeout``; a step or
    reset that gets no reply makes the router check at once. A lost server's open episodes end with
    ``end_cause: server_lost`` (``ServerLost`` from their pending and later calls; the router's copy,
    every answered turn, goes to the recording) and it gets no new episodes; it is never taken back.
    A reset refused ``busy`` or unanswered is tried on the next server (an unanswered one may have
    opened an episode there, which its server reaps at ``idle_timeout_s``).
    """

    def __init__(self, servers: list[ServerInfo], recording=None, health_interval: float = 1.0,
                 health_timeout: float = 2.0, max_health_failures: int = 3, busy_timeout: float = 10.0,
                 **client_kwargs) -> None:
        self._infos = servers
        self.recording = recording
        self.health_interval = health_interval
        self.health_timeout = health_timeout
        self.max_health_failures = max_health_failures
        self.busy_timeout = busy_timeout
        self._client_kwargs = client_kwargs
        self.servers: dict[str, _Server] = {}
        self._monitor: asyncio.Task | None = None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()

    async def start(self, ready_timeout: float = 30.0) -> None:
        for info in self._infos:
            s = _Server(info, self._client_kwargs)
            s.client.connect()
            s.prober.connect()
            self.servers[s.name] = s
        await asyncio.gather(*[self._ready(s, ready_timeout) for s in self.servers.values()])
        self._monitor = asyncio.ensure_future(self._watch())

    async def _ready(self, s, timeout):
        try:
            s.health = await s.prober.wait_ready(timeout)
        except ServerUnavailable as e:
            await self._lose(s, f"no health reply at start: {e}")

    async def aclose(self, close_episodes: bool = True) -> None:
        """Closes every open episode (recorded by its server, `end_cause: closed`), stops polling and
        closes the sockets."""
        if close_episodes:
            await asyncio.gather(*[ep.close() for s in self.servers.values() for ep in list(s.episodes.values())],
                                 return_exceptions=True)
        if self._monitor is not None:
            self._monitor.cancel()
            self._monitor = None
        for s in self.servers.values():
            await s.client.aclose()
            await s.prober.aclose()

    def status(self) -> dict[str, dict[str, Any]]:
        """Per server: routable, lost (its reason or None), free slots, open episodes of this router."""
        return {s.name: {"routable": s.routable(), "lost": s.lost_reason, "free": s.free(), "episodes": len(s.episodes),
                         "node_id": s.info.node_id, "endpoint": s.info.endpoint} for s in self.servers.values()}

    def _pick(self, tried: set[str]) -> _Server | None:
        candidates = [s for s in self.servers.values() if s.routable() and s.name not in tried and s.free() > 0]
        if not candidates:
            return None
        return max(candidates, key=lambda s: (s.free(), -s.health["episodes"]["steps_in_flight"] - len(s.episodes)))

    async def reset(self, task: str, seed: int | None = None, options: dict[str, Any] | None = None,
                    timeout: float | None = None) -> RoutedEpisode:
        """A new episode on the best server (see the class); ``busy`` when every server stays full for
        ``busy_timeout`` s, ``ServerUnavailable`` when no server is routable."""
        deadline = time.monotonic() + self.busy_timeout
        while True:
            tried: set[str] = set()
            retry_after = None
            while (s := self._pick(tried)) is not None:
                tried.add(s.name)
                s.placed += 1
                try:
                    r = await s.client.call("reset", timeout=timeout, busy_timeout=0, task=task, seed=seed,
                                            options=options)
                except ServerUnavailable as e:
                    await self._check(s, f"reset unanswered: {e}")
                    continue
                except KforgeError as e:
                    if e.kind not in ("busy", "shutting_down"):
                        raise
                    retry_after = e.retry_after
                    continue
                ep = RoutedEpisode(self, s, task, seed, options, r)
                s.episodes[ep.id] = ep
                return ep
            if not any(s.lost_reason is None for s in self.servers.values()):
                raise ServerUnavailable("no kforge server left: " + "; ".join(
                    f"{s.name}: {s.lost_reason}" for s in self.servers.values()))
            if time.monotonic() >= deadline:
                raise KforgeError("busy", f"every kforge server stayed full or unhealthy for {self.busy_timeout:g} s: "
                                          f"{self.status()}", retry_after=retry_after)
            await asyncio.sleep(min(retry_after or self.health_interval, max(0.01, deadline - time.monotonic())))
            await asyncio.gather(*[self._probe(s) for s in self.servers.values() if s.lost_reason is None])

    async def _watch(self):
        while True:
            await asyncio.sleep(self.health_interval)
            await asyncio.gather(*[self._probe(s) for s in self.servers.values() if s.lost_reason is None])

    async def _probe(self, s):
        try:
            s.health = await s.prober.health(timeout=self.health_timeout)
            s.placed = 0
            s.failures = 0
        except ServerUnavailable as e:
            s.failures += 1
            await self._check(s, f"{s.failures} health call(s) in a row unanswered: {e}")

    async def _check(self, s, why: str) -> None:
        """After a call got no reply: the server is lost if its actor is dead, or when health has
        failed ``max_health_failures`` times in a row."""
        if s.lost_reason is not None:
            return
        if not await self._actor_alive(s):
            await self._lose(s, f"its actor is dead ({why})")
        elif s.failures >= self.max_health_failures:
            await self._lose(s, why)

    async def _actor_alive(self, s) -> bool:
        if s.info.actor is None:
            return True
        import ray
        try:
            return bool(await asyncio.wait_for(s.info.actor.alive.remote(), self.health_timeout))
        except asyncio.TimeoutError:
            return True  # unknown: the health count decides
        except ray.exceptions.RayError:
            return False

    async def _lose(self, s, reason: str) -> None:
        if s.lost_reason is not None:
            return
        s.lost_reason = reason
        s.lost_event.set()
        copies = [ep._end(END_CAUSE_SERVER_LOST) for ep in list(s.episodes.values())]
        if self.recording is not None:
            self.recording.lost(s.name, copies)
        await s.client.aclose()
        await s.prober.aclose()


class RoutedEpisode:
    """One episode on the server the router chose: ``step``, ``cancel`` and ``close`` as
    ``AsyncEpisode``'s, with the episode's answered turns kept client-side (``turns``) until it ends,
    so that a lost server costs nothing that was answered."""

    def __init__(self, router: Router, server: _Server, task: str, seed, options, reply: dict[str, Any]) -> None:
        self.router = router
        self.server = server
        self.id = reply["episode"]
        self.task = task
        self.seed = seed
        self.options = options
        self.observation = reply["observation"]
        self.info = reply["info"]
        self.turns: list[dict[str, Any]] = []
        self.history: list[dict[str, Any]] = []
        self.started = time.time()
        self.done = False
        self.end_cause: str | None = None
        self._lost: ServerLost | None = None

    async def step(self, action) -> tuple[str, float, bool, bool, dict[str, Any]]:
        r = await self._call("step", action=action)
        self.turns.append({"turn": r["info"].get("turn", len(self.turns) + 1), "action": action,
                           "observation": r["observation"], "reward": r["reward"], "terminated": r["terminated"],
                           "truncated": r["truncated"], "info": r["info"], "timings": r.get("timings")})
        if "history" in r["info"]:
            self.history = r["info"]["history"]
        if r["terminated"] or r["truncated"]:
            self._ended("finished")
        return r["observation"], r["reward"], r["terminated"], r["truncated"], r["info"]

    async def cancel(self) -> dict[str, Any]:
        return await self._call("cancel")

    async def close(self) -> dict[str, Any] | None:
        """Closes it (recorded by the server, `end_cause: closed`); None if it had ended already."""
        if self.done:
            return None
        try:
            r = await self._call("close")
        except ServerLost:
            return None
        except KforgeError as e:
            if e.kind != "unknown_episode":
                raise
            r = None
        self._ended("closed")
        return r

    async def _call(self, method, **params):
        if self._lost is not None:
            raise self._lost
        s = self.server
        call = asyncio.ensure_future(s.client.call(method, episode=self.id, **params))
        lost = asyncio.ensure_future(s.lost_event.wait())
        try:
            await asyncio.wait({call, lost}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            lost.cancel()
        if not call.done():
            call.cancel()
        elif call.exception() is not None and isinstance(call.exception(), ServerUnavailable):
            await self.router._check(s, f"{method} unanswered: {call.exception()}")
        # A reply that came after the server was declared lost is not handed on either: the recorded
        # copy ends before it, and the trainer sees what the recording holds.
        if self._lost is not None:
            raise self._lost
        return call.result()

    def _ended(self, end_cause):
        t = self._end(end_cause)
        if self.router.recording is not None:
            self.router.recording.ended(self.server.name, t)

    def _end(self, end_cause) -> dict[str, Any]:
        """Marks the episode over and returns the router's copy of its trajectory (the server's schema,
        rollout/TRAJECTORY_FORMAT.md, from what the server answered)."""
        self.done = True
        self.end_cause = end_cause
        self.server.episodes.pop(self.id, None)
        t = self.trajectory(end_cause)
        if end_cause == END_CAUSE_SERVER_LOST:
            self._lost = ServerLost(self.server.name, self.id, self.server.lost_reason, t)
        return t

    def trajectory(self, end_cause: str | None = None) -> dict[str, Any]:
        ended = time.time()
        last = self.turns[-1] if self.turns else None
        info = {k: v for k, v in self.info.items() if k != "tools"}
        return {"schema": "kforge.trajectory/1", "episode": self.id, "task": self.task,
                "seed": self.info.get("seed", self.seed), "options": self.options, "gpu": self.info.get("gpu"),
                "started_unix": self.started, "ended_unix": ended, "duration_s": ended - self.started,
                "end_cause": end_cause or self.end_cause,
                "termination_reason": last["info"].get("termination_reason") if last else None,
                "terminated": bool(last and last["terminated"]), "truncated": bool(last and last["truncated"]),
                "episode_reward": sum(t["reward"] for t in self.turns), "final_reward": last["reward"] if last else 0.0,
                "reset": {"observation": self.observation, "info": info}, "turns": list(self.turns),
                "history": self.history}
