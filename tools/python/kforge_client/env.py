"""A Gymnasium-style environment over the server (one episode at a time)."""
from typing import Any, Self

from .client import Client
from .errors import KforgeError, ServerUnavailable


def best_version(history) -> dict[str, Any] | None:
    """Of a candidate history (``info["history"]``, a trajectory's ``history``), the verified version
    with the highest speedup over eager (a timed one before an untimed one; ties: the later), or None."""
    best = None
    for v in history:
        if not v.get("verified"):
            continue
        key = (v.get("speedup") is not None, (v.get("speedup") or {}).get("point", 0.0))
        if best is None or key >= best[0]:
            best = (key, v)
    return best[1] if best else None


class KernelEnv:
    """``reset(seed=None, options=None) -> (observation, info)`` and
    ``step(action) -> (observation, reward, terminated, truncated, info)``.

    ``action`` is a tool call ``{"name", "arguments"}``, an OpenAI tool call, or assistant text with a
    Hermes ``<tool_call>``. ``options`` are the episode's (max_turns, wall_clock_s, gpu_time_s, files,
    ``kind``: "kernel" or "extension") plus ``task`` to switch tasks. Observations are text; ``info`` is the server's structured info.

    ``history`` is the episode's candidate history as the server last listed it (``info["history"]``:
    one dict per version judged by verify, profile or submit, with ``version``, ``verdict``,
    ``verified``, ``judgings``, ``speedup``, ``candidate_ms``, ``eager_ms``, ``counters``; empty after
    ``reset``). The server sends it on every step that changes it, so it is always current;
    ``best_version()`` is the verified version with the highest speedup.

    The constructor asks the server for its ``health`` (``server_health`` keeps it: GPU lanes, tasks)
    and raises ``ServerUnavailable`` when none answers within ``check_timeout`` seconds (default 10;
    0 or None skips the check), or ``KforgeError`` ``shutting_down`` when it is stopping.
    """

    metadata = {"render_modes": []}

    def __init__(self, endpoint_or_client, task=None, check_timeout=10.0, **client_kwargs) -> None:
        self.client = endpoint_or_client if isinstance(endpoint_or_client, Client) else Client(endpoint_or_client,
                                                                                           **client_kwargs)
        self._own_client = not isinstance(endpoint_or_client, Client)
        self.task = task
        self.episode = None
        self.tools = None
        self.history = []
        self.server_health = None
        if check_timeout:
            try:
                self.server_health = self._check_server(check_timeout)
            except BaseException:
                if self._own_client:
                    self.client.close()
                raise

    def _check_server(self, timeout):
        try:
            health = self.client.health(timeout=timeout)
        except ServerUnavailable as e:
            raise ServerUnavailable(f"KernelEnv: no kforge server answered at {self.client.endpoint} within {timeout:g} s; "
                                    f"start one (`kforge serve --config configs/server.yaml --bind ENDPOINT`) or pass "
                                    f"its endpoint") from e
        if health.get("status") == "shutting_down":
            raise KforgeError("shutting_down", f"KernelEnv: the kforge server at {self.client.endpoint} is shutting "
                                               f"down and takes no new episodes")
        return health

    def reset(self, seed=None, options=None) -> tuple[str, dict[str, Any]]:
        options = dict(options or {})
        self.task = options.pop("task", self.task)
        if self.task is None:
            raise ValueError("no task: pass task= to KernelEnv or options={'task': ...} to reset")
        self._close_episode()
        r = self.client.reset(self.task, seed=seed, options=options or None)
        self.episode = r["episode"]
        self.tools = r["info"].get("tools")
        self.history = []
        return r["observation"], r["info"]

    def step(self, action) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self.episode is None:
            raise RuntimeError("call reset() before step()")
        r = self.client.step(self.episode, action)
        if "history" in r["info"]:
            self.history = r["info"]["history"]
        return r["observation"], r["reward"], r["terminated"], r["truncated"], r["info"]

    def best_version(self) -> dict[str, Any] | None:
        """The verified version with the highest speedup over eager (untimed ones last), or None."""
        return best_version(self.history)

    def _close_episode(self):
        if self.episode is not None:
            try:
                self.client.close_episode(self.episode)
            except KforgeError as e:
                if e.kind != "unknown_episode":  # already reaped: nothing to close
                    raise
            self.episode = None

    def close(self) -> None:
        self._close_episode()
        if self._own_client:
            self.client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
