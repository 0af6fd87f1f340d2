"""asyncio client: many concurrent requests (and episodes) over one DEALER socket, matched by request id."""
from __future__ import annotations

import asyncio
import itertools
from typing import Any, Self

import zmq
import zmq.asyncio

from .client import pack, unpack
from .budget import CallBudget
from .errors import KforgeError, ServerUnavailable


class _Lost(Exception):
    """A request's socket was replaced while it waited: its reply can no longer come."""


class AsyncClient:
    """``async with AsyncClient(endpoint) as c: ep = await c.reset("softmax_rows"); await ep.step(action)``.

    Timeouts and retries as ``Client``'s: ``timeout`` (default 300 s) bounds each call in wall-clock
    time; a request without a reply replaces the socket, and every request in flight on it is then
    lost at once (idempotent ones are re-sent after a backoff within their timeout, the others raise
    ``ServerUnavailable``); ``busy`` replies are retried after ``retry_after`` for at most
    ``busy_timeout`` seconds in all (default 10; at most ``busy_retries`` times when not None).
    """

    def __init__(self, endpoint, timeout=300.0, retries=5, backoff=0.2, max_backoff=5.0, busy_timeout=10.0,
                 busy_retries=None) -> None:
        self.endpoint = endpoint
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.busy_timeout = busy_timeout
        self.busy_retries = busy_retries
        self._ctx = zmq.asyncio.Context.instance()
        self._ids = itertools.count(1)
        self._pending = {}
        self._sock = None
        self._reader = None
        self._generation = 0
        self.reconnects = 0

    async def __aenter__(self) -> Self:
        self.connect()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()

    def connect(self) -> None:
        if self._sock is not None:
            self._sock.close(linger=0)
        if self._reader is not None:
            self._reader.cancel()
        self._generation += 1
        for fut in self._pending.values():  # their replies would come to the closed socket
            if not fut.done():
                fut.set_exception(_Lost())
        self._pending.clear()
        s = self._ctx.socket(zmq.DEALER)
        s.setsockopt(zmq.LINGER, 0)
        s.setsockopt(zmq.RCVHWM, 0)
        s.setsockopt(zmq.SNDHWM, 0)
        s.setsockopt(zmq.RECONNECT_IVL, 100)
        s.setsockopt(zmq.RECONNECT_IVL_MAX, int(self.max_backoff * 1000))
        s.connect(self.endpoint)
        self._sock = s
        self._reader = asyncio.ensure_future(self._read(s))

    async def aclose(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
            self._reader = None
        if self._sock is not None:
            self._sock.close(linger=0)
            self._sock = None
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(ServerUnavailable("the client was closed"))
        self._pending.clear()

    async def _read(self, sock):
        try:
            while True:
                frames = await sock.recv_multipart()
                if len(frames) != 3:
                    continue
                fut = self._pending.pop(frames[0], None)
                if fut is not None and not fut.done():
                    fut.set_result((frames[1], unpack(frames[2])))
        except (asyncio.CancelledError, zmq.ZMQError):
            pass

    async def call(self, method, timeout=None, busy_timeout=None, **params) -> dict[str, Any]:
        """One request: the ``ok`` payload, or ``KforgeError``/``ServerUnavailable`` within ``timeout`` s."""
        payload = pack(params)
        budget = CallBudget(self, method, timeout, busy_timeout)
        while True:
            if self._sock is None:
                self.connect()
            rid = str(next(self._ids)).encode()
            fut = asyncio.get_running_loop().create_future()
            self._pending[rid] = fut
            generation = self._generation
            await self._sock.send_multipart([rid, method.encode(), payload])
            try:
                status, data = await asyncio.wait_for(fut, budget.attempt_timeout())
            except (asyncio.TimeoutError, _Lost):
                self._pending.pop(rid, None)
                if generation == self._generation:  # the first to notice replaces the socket
                    self.connect()
                    self.reconnects += 1
                await asyncio.sleep(budget.lost())  # raises ServerUnavailable once there is nothing left to try
                continue
            if status == b"ok":
                return data
            err = KforgeError.from_payload(data)
            if err.kind != "busy":
                raise err
            await asyncio.sleep(budget.busy(err))  # raises the busy error once busy_timeout is spent

    async def wait_ready(self, timeout=30.0) -> dict[str, Any]:
        """Polls ``health`` until the server answers; its health, or ``ServerUnavailable`` within ``timeout`` s."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            try:
                return await self.call("health", timeout=max(0.05, min(1.0, deadline - loop.time())))
            except ServerUnavailable as e:
                if loop.time() + 0.05 >= deadline:
                    raise ServerUnavailable(f"no kforge server answered health at {self.endpoint} within "
                                            f"{timeout:g} s (is `kforge serve` running with this --bind?)") from e

    async def health(self, timeout=None) -> dict[str, Any]:
        return await self.call("health", timeout=timeout)

    async def tools(self, timeout=None) -> list[dict[str, Any]]:
        return (await self.call("tools", timeout=timeout))["tools"]

    async def tasks(self, timeout=None, **filters) -> dict[str, Any]:
        return await self.call("tasks", timeout=timeout, **filters)

    async def reset(self, task, seed=None, options=None, timeout=None) -> AsyncEpisode:
        r = await self.call("reset", timeout=timeout, task=task, seed=seed, options=options)
        return AsyncEpisode(self, r["episode"], r["observation"], r["info"])


class AsyncEpisode:
    """One open episode: ``await step(action) -> (observation, reward, terminated, truncated, info)``."""

    def __init__(self, client, episode, observation, info) -> None:
        self.client = client
        self.id = episode
        self.observation = observation
        self.info = info
        self.done = False

    async def step(self, action) -> tuple[str, float, bool, bool, dict[str, Any]]:
        r = await self.client.call("step", episode=self.id, action=action)
        self.done = r["terminated"] or r["truncated"]
        return r["observation"], r["reward"], r["terminated"], r["truncated"], r["info"]

    async def cancel(self) -> dict[str, Any]:
        return await self.client.call("cancel", episode=self.id)

    async def close(self) -> dict[str, Any] | None:
        try:
            return await self.client.call("close", episode=self.id)
        except KforgeError as e:
            if e.kind != "unknown_episode":
                raise
