"""Synchronous client: one DEALER socket, one request at a time."""
import itertools
import time
from typing import Any, Self

import msgpack
import zmq

from .budget import CallBudget
from .errors import KforgeError, ServerUnavailable


def pack(params) -> bytes:
    return msgpack.packb({"v": 1, **{k: v for k, v in params.items() if v is not None}}, use_bin_type=True)


def unpack(payload) -> Any:
    return msgpack.unpackb(payload, raw=False, strict_map_key=True)


class Client:
    """Requests to a kforge server.

    ``timeout`` (seconds, default 120) bounds each call in wall-clock time: it returns or raises
    within it, whatever happens. When no reply comes the socket is replaced (libzmq reconnects on its
    own, with ``reconnect_ivl`` growing to ``reconnect_ivl_max``) and, for methods that are safe to
    repeat (health, tools, tasks, cancel), the request is sent again after an exponential backoff,
    up to ``retries`` times within the timeout; a lost ``reset``/``step``/``close`` raises
    ``ServerUnavailable`` rather than risk doing it twice.

    A ``busy`` reply (the server is at capacity; nothing was done) is retried after its
    ``retry_after`` for at most ``busy_timeout`` seconds in all (default 10; and at most
    ``busy_retries`` times when that is not None), then raised as the ``busy`` ``KforgeError``.
    Every method takes ``timeout=`` (and ``call`` ``busy_timeout=``) for one call.
    """

    def __init__(self, endpoint, timeout=120.0, retries=5, backoff=0.2, max_backoff=5.0, busy_timeout=10.0,
                 busy_retries=None, context=None) -> None:
        self.endpoint = endpoint
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.busy_timeout = busy_timeout
        self.busy_retries = busy_retries
        self._ctx = context or zmq.Context.instance()
        self._ids = itertools.count(1)
        self._sock = None
        self.reconnects = 0
        self._connect()

    def _connect(self):
        if self._sock is not None:
            self._sock.close(linger=0)
        s = self._ctx.socket(zmq.DEALER)
        s.setsockopt(zmq.LINGER, 0)
        s.setsockopt(zmq.RECONNECT_IVL, 100)
        s.setsockopt(zmq.RECONNECT_IVL_MAX, int(self.max_backoff * 1000))
        s.connect(self.endpoint)
        self._sock = s

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close(linger=0)
            self._sock = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _once(self, method, payload, timeout):
        rid = str(next(self._ids)).encode()
        self._sock.send_multipart([rid, method.encode(), payload])
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not self._sock.poll(int(left * 1000) + 1):
                return None
            frames = self._sock.recv_multipart()
            if len(frames) == 3 and frames[0] == rid:
                return frames[1], unpack(frames[2])
            # A late reply to a request given up on: ignore it.

    def call(self, method, timeout=None, busy_timeout=None, **params) -> dict[str, Any]:
        """Sends one request; returns the ``ok`` payload or raises ``KforgeError``/``ServerUnavailable``
        within ``timeout`` seconds (the client's when None)."""
        payload = pack(params)
        budget = CallBudget(self, method, timeout, busy_timeout)
        while True:
            got = self._once(method, payload, budget.attempt_timeout())
            if got is None:
                self._connect()
                self.reconnects += 1
                time.sleep(budget.lost())  # raises ServerUnavailable once there is nothing left to try
                continue
            status, data = got
            if status == b"ok":
                return data
            err = KforgeError.from_payload(data)
            if err.kind != "busy":
                raise err
            time.sleep(budget.busy(err))  # raises the busy error once busy_timeout is spent

    def wait_ready(self, timeout=30.0) -> dict[str, Any]:
        """Polls ``health`` until the server answers (e.g. right after starting it); returns its
        health, or raises ``ServerUnavailable`` within ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            try:
                return self.call("health", timeout=max(0.05, min(1.0, left)))
            except ServerUnavailable as e:
                if time.monotonic() + 0.05 >= deadline:
                    raise ServerUnavailable(f"no kforge server answered health at {self.endpoint} within "
                                            f"{timeout:g} s (is `kforge serve` running with this --bind?)") from e

    # Convenience wrappers (timeout: this call's bound, the client's when None).
    def health(self, timeout=None) -> dict[str, Any]:
        return self.call("health", timeout=timeout)

    def tools(self, timeout=None) -> list[dict[str, Any]]:
        return self.call("tools", timeout=timeout)["tools"]

    def tasks(self, split=None, source=None, ops=None, limit=None, offset=None, timeout=None) -> dict[str, Any]:
        return self.call("tasks", timeout=timeout, split=split, source=source, ops=ops, limit=limit, offset=offset)

    def reset(self, task, seed=None, options=None, timeout=None) -> dict[str, Any]:
        return self.call("reset", timeout=timeout, task=task, seed=seed, options=options)

    def step(self, episode, action, timeout=None) -> dict[str, Any]:
        return self.call("step", timeout=timeout, episode=episode, action=action)

    def close_episode(self, episode, timeout=None) -> dict[str, Any]:
        return self.call("close", timeout=timeout, episode=episode)

    def cancel(self, episode, timeout=None) -> dict[str, Any]:
        return self.call("cancel", timeout=timeout, episode=episode)
