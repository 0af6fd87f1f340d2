"""SkyRL adapter: ``KforgeTextEnv``, a ``skyrl_gym`` ``BaseTextEnv`` over the kforge server.

Importing this module registers it with skyrl_gym's registry as ``kforge``. SkyRL's generator makes
one environment per trajectory, ``skyrl_gym.make("kforge", env_config=..., extras=...)``, then
calls ``init(prompt)`` once and ``step(model_text)`` until ``done`` (from worker threads:
``generator.max_env_workers``), then ``get_metrics()`` and ``close()``.

- ``env_config`` (the trainer config's ``environment.skyrl_gym.kforge`` section; a dict or an
  omegaconf DictConfig): ``endpoint`` (required), ``timeout`` (seconds per request, default 900:
  a submit may wait in a busy GPU queue), ``busy_timeout`` (how long ``busy`` replies are retried,
  default 600), ``connect_timeout`` (how long ``init`` waits for the server, default 60),
  ``observation_role`` (the role of the environment's messages, default ``user``; ``tool`` for
  chat templates that render tool results), ``on_error`` (``end``, the default: a lost episode
  ends with ``error_reward`` and ``metadata["kforge_error"]``; ``raise``: the exception propagates)
  and ``error_reward`` (default 0.0). Unknown keys are errors.
- ``extras`` (the dataset row's extra fields): ``task`` (required), ``seed``, ``options`` (the
  episode's: ``wall_clock_s``, ``gpu_time_s``, ``files``), and ``max_turns`` (SkyRL's generator
  sets it from ``generator.max_turns``; it becomes the episode's ``max_turns``, so the server
  truncates the episode, with the no-submission reward, exactly where SkyRL stops).

``init(prompt)`` opens the episode and returns the dataset's messages (a system prompt, say)
followed by the task prompt as a user message. ``step`` sends the model's text as it is (the
server parses the Hermes ``<tool_call>``) and returns ``BaseTextEnvStepOutput``: the observation
as one message (none once done), the step's reward (0 until the episode ends; then the reward
tier), ``done`` (terminated or truncated) and ``metadata`` (the server's info: report, reward
evidence; and the last observation once done).
"""
from typing import Any

import skyrl_gym
from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput

from ..client import Client
from ..errors import KforgeError, ServerUnavailable

ENV_ID = "kforge"
CONFIG_DEFAULTS = {"endpoint": None, "timeout": 900.0, "busy_timeout": 600.0, "connect_timeout": 60.0,
                   "observation_role": "user", "on_error": "end", "error_reward": 0.0}


def _config(env_config):
    given = {} if env_config is None else {str(k): env_config[k] for k in env_config.keys()}
    unknown = sorted(set(given) - set(CONFIG_DEFAULTS))
    if unknown:
        raise ValueError(f"kforge env_config: unknown key(s) {unknown}; known: {sorted(CONFIG_DEFAULTS)}")
    config = {**CONFIG_DEFAULTS, **given}
    if not config["endpoint"]:
        raise ValueError("kforge env_config: endpoint is required (the kforge serve endpoint, tcp://HOST:PORT)")
    if config["on_error"] not in ("end", "raise"):
        raise ValueError(f"kforge env_config: on_error is 'end' or 'raise', not {config['on_error']!r}")
    return config


class KforgeTextEnv(BaseTextEnv):
    """One kforge episode per environment object (see the module docstring)."""

    def __init__(self, env_config=None, extras=None) -> None:
        super().__init__()
        self.config = _config(env_config)
        extras = dict(extras or {})
        self.task = extras.get("task")
        if not self.task:
            raise ValueError("kforge extras: task is required (a task name the server serves)")
        self.seed = extras.get("seed")
        self.options = dict(extras.get("options") or {})
        if extras.get("max_turns") is not None:
            self.options["max_turns"] = int(extras["max_turns"])
        self.max_turns = self.options.get("max_turns", 1)
        self.client = None
        self.episode = None
        self.info = None
        self.episode_reward = 0.0
        self.done = False
        self.error = None

    def init(self, prompt=None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        if self.client is not None:
            raise RuntimeError("kforge: init() once per environment; SkyRL makes a new one per trajectory")
        self.client = Client(self.config["endpoint"], timeout=float(self.config["timeout"]),
                             busy_timeout=float(self.config["busy_timeout"]))
        try:
            self.client.wait_ready(timeout=float(self.config["connect_timeout"]))
            r = self.client.reset(self.task, seed=self.seed, options=self.options or None)
        except BaseException:  # no episode known here (one whose reply was lost is reaped by the idle timeout)
            self.client.close()
            self.client = None
            raise
        self.episode, self.info = r["episode"], r["info"]
        self.max_turns = self.info.get("max_turns", self.max_turns)
        messages = [dict(m) for m in (prompt or [])]
        messages.append({"role": "user", "content": r["observation"]})
        return messages, dict(self.info)

    def step(self, action) -> BaseTextEnvStepOutput:
        if self.episode is None:
            raise RuntimeError("kforge: call init() before step()")
        if self.done:
            raise RuntimeError("kforge: the episode is over; SkyRL makes a new environment per trajectory")
        self.turns += 1
        try:
            r = self.client.step(self.episode, action)
        except (KforgeError, ServerUnavailable) as e:
            return self._lost(e)
        self.info = r["info"]
        reward = float(r["reward"])
        self.episode_reward += reward
        self.done = bool(r["terminated"] or r["truncated"])
        metadata = dict(self.info)
        if self.done:
            metadata["observation"] = r["observation"]
            observations = []
        else:
            observations = [{"role": self.config["observation_role"], "content": r["observation"]}]
        return BaseTextEnvStepOutput(observations=observations, reward=reward, done=self.done, metadata=metadata)

    def _lost(self, e):
        """The server could not take the step (restarted: ``unknown_episode``; down: ``ServerUnavailable``;
        still ``busy`` after busy_timeout): the episode cannot go on."""
        if self.config["on_error"] == "raise":
            raise e
        kind = e.kind if isinstance(e, KforgeError) else "server_unavailable"
        self.error = {"kind": kind, "message": str(e)}
        self.done = True
        reward = float(self.config["error_reward"])
        self.episode_reward += reward
        return BaseTextEnvStepOutput(observations=[], reward=reward, done=True, metadata={"kforge_error": self.error})

    def get_metrics(self) -> dict[str, float]:
        info = self.info or {}
        reward_info = info.get("reward") or {}
        speedup = ((reward_info.get("eager") or {}).get("speedup") or {}).get("point")
        metrics = {"episode_reward": self.episode_reward, "turns": self.turns,
                   "submitted": int(info.get("termination_reason") == "submitted"),
                   "truncated": int(info.get("termination_reason") not in (None, "submitted")),
                   "lost": int(self.error is not None)}
        if isinstance(speedup, (int, float)):
            metrics["speedup_eager"] = float(speedup)
        return metrics

    def close(self) -> None:
        episode, self.episode = self.episode, None
        client, self.client = self.client, None
        if client is None:
            return
        try:  # a server that did not answer is not waited for again
            if episode is not None and (self.error or {}).get("kind") != "server_unavailable":
                client.close_episode(episode, timeout=min(10.0, float(self.config["timeout"])))
        except (KforgeError, ServerUnavailable):
            pass  # already gone (a restart, the idle reaper): nothing left to record
        finally:
            client.close()


def register() -> None:
    """Registers ``kforge`` with skyrl_gym (idempotent)."""
    if ENV_ID not in skyrl_gym.registry:
        skyrl_gym.register(id=ENV_ID, entry_point="kforge_client.adapters.skyrl_env:KforgeTextEnv")


register()
