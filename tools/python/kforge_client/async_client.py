"""asyncio client: many concurrent requests (and episodes) over one DEALER socket, matched by request id."""
import asyncio
import itertools

import zmq
import zmq.asyncio

from .client import pack, unpack
from .errors import IDEMPOTENT, KforgeError, ServerUnavailable


class AsyncClient:
    """``async with AsyncClient(endpoint) as c: ep = await c.reset("softmax_rows"); await ep.step(action)``.

    Busy replies are retried after ``retry_after``; a request without a reply within ``timeout``
    replaces the socket (every request in flight on it is then lost: idempotent ones are re-sent
    after a backoff, the others raise ``ServerUnavailable``).
    """

    def __init__(self, endpoint, timeout=300.0, retries=5, backoff=0.2, max_backoff=5.0, busy_retries=50):
        self.endpoint = endpoint
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.busy_retries = busy_retries
        self._ctx = zmq.asyncio.Context.instance()
        self._ids = itertools.count(1)
        self._pending = {}
        self._sock = None
        self._reader = None
        self._generation = 0
        self.reconnects = 0

    async def __aenter__(self):
        self.connect()
        return self

    async def __aexit__(self, *exc):
        await self.aclose()

    def connect(self):
        if self._sock is not None:
            self._sock.close(linger=0)
        if self._reader is not None:
            self._reader.cancel()
        self._generation += 1
        s = self._ctx.socket(zmq.DEALER)
        s.setsockopt(zmq.LINGER, 0)
        s.setsockopt(zmq.RCVHWM, 0)
        s.setsockopt(zmq.SNDHWM, 0)
        s.setsockopt(zmq.RECONNECT_IVL, 100)
        s.setsockopt(zmq.RECONNECT_IVL_MAX, int(self.max_backoff * 1000))
        s.connect(self.endpoint)
        self._sock = s
        self._reader = asyncio.ensure_future(self._read(s))

    async def aclose(self):
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

    async def call(self, method, timeout=None, **params):
        payload = pack(params)
        timeout = self.timeout if timeout is None else timeout
        busy_left, lost, delay = self.busy_retries, 0, self.backoff
        while True:
            if self._sock is None:
                self.connect()
            rid = str(next(self._ids)).encode()
            fut = asyncio.get_running_loop().create_future()
            self._pending[rid] = fut
            generation = self._generation
            await self._sock.send_multipart([rid, method.encode(), payload])
            try:
                status, data = await asyncio.wait_for(fut, timeout)
            except asyncio.TimeoutError:
                self._pending.pop(rid, None)
                if generation == self._generation:  # the first to notice replaces the socket
                    self.connect()
                    self.reconnects += 1
                lost += 1
                if method not in IDEMPOTENT or lost > self.retries:
                    raise ServerUnavailable(f"no reply to {method} from {self.endpoint} within {timeout} s")
                await asyncio.sleep(delay)
                delay = min(delay * 2, self.max_backoff)
                continue
            if status == b"ok":
                return data
            err = KforgeError.from_payload(data)
            if err.kind == "busy" and busy_left > 0:
                busy_left -= 1
                await asyncio.sleep(err.retry_after or self.backoff)
                continue
            raise err

    async def health(self):
        return await self.call("health")

    async def tools(self):
        return (await self.call("tools"))["tools"]

    async def tasks(self, **filters):
        return await self.call("tasks", **filters)

    async def reset(self, task, seed=None, options=None):
        r = await self.call("reset", task=task, seed=seed, options=options)
        return AsyncEpisode(self, r["episode"], r["observation"], r["info"])


class AsyncEpisode:
    """One open episode: ``await step(action) -> (observation, reward, terminated, truncated, info)``."""

    def __init__(self, client, episode, observation, info):
        self.client = client
        self.id = episode
        self.observation = observation
        self.info = info
        self.done = False

    async def step(self, action):
        r = await self.client.call("step", episode=self.id, action=action)
        self.done = r["terminated"] or r["truncated"]
        return r["observation"], r["reward"], r["terminated"], r["truncated"], r["info"]

    async def cancel(self):
        return await self.client.call("cancel", episode=self.id)

    async def close(self):
        try:
            return await self.client.call("close", episode=self.id)
        except KforgeError as e:
            if e.kind != "unknown_episode":
                raise
