"""Synchronous client: one DEALER socket, one request at a time."""
import itertools
import time

import msgpack
import zmq

from .errors import IDEMPOTENT, KforgeError, ServerUnavailable


def pack(params):
    return msgpack.packb({"v": 1, **{k: v for k, v in params.items() if v is not None}}, use_bin_type=True)


def unpack(payload):
    return msgpack.unpackb(payload, raw=False, strict_map_key=True)


class Client:
    """Requests to a kforge server.

    A ``busy`` reply (the server is at capacity; nothing was done) is retried after its
    ``retry_after``, up to ``busy_retries`` times. When no reply comes within ``timeout`` the
    socket is replaced (libzmq reconnects on its own, with ``reconnect_ivl`` growing to
    ``reconnect_ivl_max``) and, for methods that are safe to repeat (health, tools, tasks,
    cancel), the request is sent again after an exponential backoff, up to ``retries`` times;
    a lost ``reset``/``step``/``close`` raises ``ServerUnavailable`` rather than risk doing it twice.
    """

    def __init__(self, endpoint, timeout=120.0, retries=5, backoff=0.2, max_backoff=5.0, busy_retries=50,
                 context=None):
        self.endpoint = endpoint
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff
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

    def close(self):
        if self._sock is not None:
            self._sock.close(linger=0)
            self._sock = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
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

    def call(self, method, timeout=None, **params):
        """Sends one request; returns the ``ok`` payload or raises ``KforgeError``/``ServerUnavailable``."""
        payload = pack(params)
        timeout = self.timeout if timeout is None else timeout
        busy_left, lost, delay = self.busy_retries, 0, self.backoff
        while True:
            got = self._once(method, payload, timeout)
            if got is None:
                self._connect()
                self.reconnects += 1
                lost += 1
                if method not in IDEMPOTENT or lost > self.retries:
                    raise ServerUnavailable(f"no reply to {method} from {self.endpoint} within {timeout} s "
                                            f"({lost} attempt(s)); the socket was reconnected")
                time.sleep(delay)
                delay = min(delay * 2, self.max_backoff)
                continue
            status, data = got
            if status == b"ok":
                return data
            err = KforgeError.from_payload(data)
            if err.kind == "busy" and busy_left > 0:
                busy_left -= 1
                time.sleep(err.retry_after or self.backoff)
                continue
            raise err

    def wait_ready(self, timeout=30.0):
        """Polls ``health`` until the server answers (e.g. right after starting it)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                return self.call("health", timeout=min(1.0, max(0.05, deadline - time.monotonic())))
            except ServerUnavailable:
                if time.monotonic() > deadline:
                    raise

    # Convenience wrappers.
    def health(self):
        return self.call("health")

    def tools(self):
        return self.call("tools")["tools"]

    def tasks(self, split=None, source=None, ops=None, limit=None, offset=None):
        return self.call("tasks", split=split, source=source, ops=ops, limit=limit, offset=offset)

    def reset(self, task, seed=None, options=None):
        return self.call("reset", task=task, seed=seed, options=options)

    def step(self, episode, action):
        return self.call("step", episode=episode, action=action)

    def close_episode(self, episode):
        return self.call("close", episode=episode)

    def cancel(self, episode):
        return self.call("cancel", episode=episode)
