"""Gymnasium adapter: ``KernelGymEnv``, a real ``gymnasium.Env`` over the kforge server.

Importing this module registers ``kforge/Kernel-v0`` (and its vector form, ``gymnasium_vector.py``):

    env = gymnasium.make("kforge/Kernel-v0", endpoint="tcp://127.0.0.1:5555", task="softmax_rows")
    # or, without importing it first:
    env = gymnasium.make("kforge_client.adapters.gymnasium_env:kforge/Kernel-v0", endpoint=..., task=...)

Gymnasium 1.x loads no plugin entry points (gymnasium/envs/__init__.py registers its own
environments only), so registration happens on import; the ``module:id`` form of ``make`` does the
import. gymnasium is an extra (``pip install tools/python[gymnasium]``): the plain
``kforge_client.KernelEnv`` stays importable without it, for the trainers that do not use it.

Observations and actions are text: ``AnyText`` spaces (``gymnasium.spaces.Text`` whose ``contains``
accepts any Unicode text up to the length bound; see its docstring). The registration declares the
environment ``nondeterministic``: a step's info carries wall-clock times, the episode id and GPU
measurements, which no seed fixes (tools/python/docs/gymnasium.md, check_env).
"""
import string
from typing import Any

import gymnasium
from gymnasium import logger
from gymnasium.spaces import Text

from ..env import KernelEnv

ENV_ID = "kforge/Kernel-v0"

# configs/env.yaml's defaults: the prompt is trimmed to prompt_max_chars (40000), every tool
# observation to observation_max_chars (8000), counted in UTF-8 bytes, so never more characters.
# The server publishes neither (health has no limits): pass the server's values when they differ.
DEFAULT_MAX_OBSERVATION_CHARS = 40000
# An action is one assistant message: a write_file of up to the whole workspace budget
# (workspace.max_total_bytes, 1 MiB) with its reasoning. At most 4 MiB of UTF-8, so any action in
# the space fits in the server's default protocol.max_payload_bytes (16 MiB).
DEFAULT_MAX_ACTION_CHARS = 1 << 20
# What sample() draws from: what JSON tool calls and CUDA source are written in.
SAMPLE_CHARSET = string.printable


class AnyText(Text):
    """A ``gymnasium.spaces.Text`` of any Unicode text of ``min_length`` to ``max_length`` characters.

    ``contains(x)`` is true for every ``str`` that is valid Unicode (encodes to UTF-8: no lone
    surrogates), which is what msgpack carries and the server accepts and sends: CUDA source, JSON,
    prose, a '—' in a prompt, an emoji a policy wrote and read_file echoes back. ``sample()`` draws
    from ``SAMPLE_CHARSET`` (printable ASCII). Why not ``Text(charset=<all of Unicode>)``: Text
    materialises its charset as a set, a sorted list and an index; for the 1 112 064 scalar values
    that takes about 10 s and 226 MB per space (the Basic Multilingual Plane alone, 0.6 s and 12 MB,
    and it still refuses emoji). Not flattenable to a fixed-size array (``is_np_flattenable`` False).
    """

    def __init__(self, max_length, *, min_length=0, seed=None) -> None:
        super().__init__(max_length, min_length=min_length, charset=SAMPLE_CHARSET, seed=seed)

    def contains(self, x) -> bool:
        if not isinstance(x, str) or not self.min_length <= len(x) <= self.max_length:
            return False
        if x.isascii():
            return True
        try:
            x.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return True

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"AnyText({self.min_length}, {self.max_length})"

    def __eq__(self, other) -> bool:
        return isinstance(other, AnyText) and (self.min_length, self.max_length) == (other.min_length, other.max_length)

    __hash__ = None


def draw_episode_seed(rng) -> int:
    """An episode seed for the server (``[0, 2^63)``) from a Gymnasium generator."""
    return int(rng.integers(0, 2 ** 63))


class KernelGymEnv(KernelEnv, gymnasium.Env):
    """``KernelEnv`` as a ``gymnasium.Env``: the same episodes, plus Gymnasium's spaces and seeding.

    - ``reset(seed=S)`` seeds ``np_random`` with S (``gymnasium.Env.reset``) and plays the server's
      episode seed S (the trajectory records S); ``reset()`` draws the episode seed from
      ``np_random``, so a run of resets after one seeded reset is reproducible.
    - ``observation_space``: ``AnyText(max_observation_chars)`` (the prompt and every tool
      observation); ``action_space``: ``AnyText(max_action_chars)``, the assistant's text (a Hermes
      ``<tool_call>``). A tool-call dict or OpenAI tool call is accepted too (as by ``KernelEnv``);
      it is outside the Text space, and Gymnasium never checks actions against it.
    - ``render_mode`` None only (``metadata["render_modes"]`` is empty): the observation is the
      rendering. ``close()`` closes the episode (its trajectory is recorded) and may be called twice.
    - Every step's ``info["history"]`` is the episode's candidate history (``KernelEnv.history``: the
      versions judged so far, with verdicts and speedups); ``info["version"]`` names the one a
      verify, profile or submit judged.
    - Errors are ``KernelEnv``'s: a failing tool is an observation; ``KforgeError`` (``busy`` after
      ``busy_timeout``, ``unknown_episode`` after a server restart) and ``ServerUnavailable`` raise.
    """

    metadata = {"render_modes": []}

    def __init__(self, endpoint=None, task=None, render_mode=None, max_observation_chars=None, max_action_chars=None,
                 check_timeout=10.0, **client_kwargs) -> None:
        if endpoint is None:
            raise ValueError(f"{ENV_ID}: pass endpoint= (a kforge serve endpoint such as tcp://127.0.0.1:5555, "
                             f"or a kforge_client.Client)")
        if render_mode is not None:
            raise ValueError(f"{ENV_ID}: render_mode {render_mode!r} is not supported (only None: the observation is "
                             f"the text a policy reads)")
        self.render_mode = None
        self.observation_space = AnyText(int(max_observation_chars or DEFAULT_MAX_OBSERVATION_CHARS))
        self.action_space = AnyText(int(max_action_chars or DEFAULT_MAX_ACTION_CHARS))
        self._warned_long = False
        KernelEnv.__init__(self, endpoint, task=task, check_timeout=check_timeout, **client_kwargs)

    def reset(self, *, seed=None, options=None) -> tuple[str, dict[str, Any]]:
        gymnasium.Env.reset(self, seed=seed)
        episode_seed = draw_episode_seed(self.np_random) if seed is None else int(seed)
        observation, info = KernelEnv.reset(self, seed=episode_seed, options=options)
        self._check_length(observation)
        return observation, info

    def step(self, action) -> tuple[str, float, bool, bool, dict[str, Any]]:
        observation, reward, terminated, truncated, info = KernelEnv.step(self, action)
        self._check_length(observation)
        info = dict(info)
        info.setdefault("history", self.history)  # every step's info carries the current candidate history
        return observation, float(reward), bool(terminated), bool(truncated), info

    def render(self) -> None:
        return None

    def _check_length(self, observation):
        if len(observation) > self.observation_space.max_length and not self._warned_long:
            self._warned_long = True
            logger.warn(f"{ENV_ID}: an observation of {len(observation)} characters is longer than observation_space "
                        f"allows ({self.observation_space.max_length}): the server's prompt_max_chars or "
                        f"observation_max_chars exceed it; pass max_observation_chars=")


def register() -> None:
    """Registers ``kforge/Kernel-v0`` with its vector entry point (idempotent)."""
    if ENV_ID not in gymnasium.registry:
        gymnasium.register(id=ENV_ID, entry_point="kforge_client.adapters.gymnasium_env:KernelGymEnv",
                           vector_entry_point="kforge_client.adapters.gymnasium_vector:KernelVectorEnv",
                           nondeterministic=True)


register()
