"""Gymnasium vector adapter: ``KernelVectorEnv``, N episodes stepped concurrently over one ``AsyncClient``.

    envs = gymnasium.make_vec("kforge/Kernel-v0", num_envs=8, endpoint=..., task="softmax_rows")
    observations, infos = envs.reset(seed=0)          # a tuple of 8 prompts
    observations, rewards, terminations, truncations, infos = envs.step(actions)   # 8 actions

A real ``gymnasium.vector.VectorEnv``: one ``step`` sends the N steps at once (one socket, requests
matched by id; the server runs them on its compile and GPU lanes) and returns when all have
answered, so a vector step lasts as long as its slowest sub-step. Autoreset, the three Gymnasium
modes (``autoreset_mode=``, in ``metadata["autoreset_mode"]``):

- ``NEXT_STEP`` (Gymnasium's default): the step after a sub-episode ends resets it and ignores its
  action (reward 0, the new prompt as observation);
- ``SAME_STEP``: a sub-episode that ends is reset in the same step; its last observation and info
  are ``infos["final_obs"]`` / ``infos["final_info"]``;
- ``DISABLED``: nothing resets by itself; ``reset(options={"reset_mask": mask})`` resets the masked
  sub-episodes. The mode to pick for an LLM policy: no generation is spent on an action that is
  thrown away. Stepping an ended sub-episode is a ``ValueError``.

Seeds: ``reset(seed=S)`` seeds sub-environment i with S + i (a list of N seeds is taken as it is);
each keeps its own ``np_random``, from which unseeded and automatic resets draw episode seeds.
An episode that ends is closed (its trajectory recorded) before the next one is opened. Every info,
a step's too, carries ``episode``, the id of the trajectory it belongs to.

Errors: when a sub-environment's call raises (``KforgeError``: ``unknown_episode`` after a server
restart, ``busy`` after ``busy_timeout``; ``ServerUnavailable``), the others still run to the end,
then the first error is raised and ``last_errors`` maps each failed index to its exception; the
results of that call are lost, so ``reset()`` (all, or the failed ones by ``reset_mask``).
"""
import asyncio
from typing import Any

import numpy as np
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from ..async_client import AsyncClient
from .gymnasium_env import DEFAULT_MAX_ACTION_CHARS, DEFAULT_MAX_OBSERVATION_CHARS, ENV_ID, AnyText, draw_episode_seed


class KernelVectorEnv(VectorEnv):
    """``num_envs`` kforge episodes of ``task`` over one ``AsyncClient`` (created from ``endpoint`` with
    ``client_kwargs``), driven by a private event loop: call it from synchronous code."""

    def __init__(self, num_envs, endpoint=None, task=None, autoreset_mode=AutoresetMode.NEXT_STEP,
                 max_observation_chars=None, max_action_chars=None, render_mode=None, check_timeout=10.0,
                 **client_kwargs) -> None:
        if endpoint is None:
            raise ValueError(f"{ENV_ID} (vector): pass endpoint= (a kforge serve endpoint)")
        if render_mode is not None:
            raise ValueError(f"{ENV_ID} (vector): render_mode {render_mode!r} is not supported (only None)")
        if int(num_envs) < 1:
            raise ValueError(f"{ENV_ID} (vector): num_envs must be >= 1, not {num_envs}")
        self.num_envs = int(num_envs)
        self.task = task
        self.autoreset_mode = AutoresetMode(autoreset_mode)
        self.metadata = {"render_modes": [], "autoreset_mode": self.autoreset_mode}
        self.render_mode = None
        self.single_observation_space = AnyText(int(max_observation_chars or DEFAULT_MAX_OBSERVATION_CHARS))
        self.single_action_space = AnyText(int(max_action_chars or DEFAULT_MAX_ACTION_CHARS))
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._rngs = [seeding.np_random()[0] for _ in range(self.num_envs)]
        self._episodes = [None] * self.num_envs
        self._last_obs = [""] * self.num_envs
        self._ended = np.zeros(self.num_envs, dtype=bool)
        self._loop = asyncio.new_event_loop()
        self.client = AsyncClient(endpoint, **client_kwargs)
        self.server_health = None
        self.last_errors = {}  # sub-environment index -> the exception its last call raised
        try:
            self._run(self._connect(check_timeout))
        except BaseException:
            self.close()
            raise

    def _run(self, coro):
        return self._loop.run_until_complete(coro)

    def _run_all(self, indices, coros):
        """Runs the sub-environments' calls to the end, each of them, then raises the first error."""
        async def gather():
            return await asyncio.gather(*coros, return_exceptions=True)
        results = self._run(gather())
        self.last_errors = {i: r for i, r in zip(indices, results) if isinstance(r, BaseException)}
        if self.last_errors:
            raise next(iter(self.last_errors.values()))
        return results

    async def _connect(self, check_timeout):
        self.client.connect()
        if check_timeout:
            self.server_health = await self.client.wait_ready(timeout=check_timeout)

    def reset(self, *, seed=None, options=None) -> tuple[tuple[str, ...], dict[str, Any]]:
        options = dict(options or {})
        mask = options.pop("reset_mask", None)
        mask = np.ones(self.num_envs, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
        if mask.shape != (self.num_envs,) or not mask.any():
            raise ValueError(f"reset_mask must be {self.num_envs} booleans, at least one True: {mask}")
        if seed is not None:
            if isinstance(seed, (list, tuple, np.ndarray)):
                seeds = list(seed)
            else:
                seeds = [int(seed) + i for i in range(self.num_envs)]
            if len(seeds) != self.num_envs:
                raise ValueError(f"{len(seeds)} seeds for {self.num_envs} sub-environments")
            self._np_random, self._np_random_seed = seeding.np_random(seeds[0])
        else:
            seeds = [None] * self.num_envs
        self.task = options.pop("task", self.task)
        if self.task is None:
            raise ValueError("no task: pass task= to the vector env or options={'task': ...} to reset")
        indices = [i for i in range(self.num_envs) if mask[i]]
        results = self._run_all(indices, [self._reset_one(i, seeds[i], options) for i in indices])
        infos = {}
        for i, (obs, info) in zip(indices, results):
            self._last_obs[i] = obs
            infos = self._add_info(infos, info, i)
        return tuple(self._last_obs), infos  # a sub-episode left out of the mask: its last observation

    async def _reset_one(self, i, seed, options):
        if seed is not None:
            self._rngs[i] = seeding.np_random(int(seed))[0]
        episode_seed = draw_episode_seed(self._rngs[i]) if seed is None else int(seed)
        await self._close_one(i)
        episode = await self.client.reset(self.task, seed=episode_seed, options=options or None)
        self._episodes[i] = episode
        self._ended[i] = False
        return episode.observation, episode.info

    async def _close_one(self, i):
        episode, self._episodes[i] = self._episodes[i], None
        if episode is not None:
            await episode.close()

    def step(self, actions) -> tuple[tuple[str, ...], np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        actions = list(actions)
        if len(actions) != self.num_envs:
            raise ValueError(f"{len(actions)} actions for {self.num_envs} sub-environments")
        if any(e is None for e in self._episodes):
            raise RuntimeError("call reset() before step() (every sub-environment needs an episode)")
        if self.autoreset_mode == AutoresetMode.DISABLED and self._ended.any():
            raise ValueError(f"sub-environments {np.flatnonzero(self._ended).tolist()} have ended: with autoreset "
                             f"DISABLED, reset them with reset(options={{'reset_mask': mask}}) before stepping")
        results = self._run_all(range(self.num_envs), [self._step_one(i, a) for i, a in enumerate(actions)])
        infos = {}
        rewards = np.zeros(self.num_envs, dtype=np.float64)
        terminations = np.zeros(self.num_envs, dtype=bool)
        truncations = np.zeros(self.num_envs, dtype=bool)
        for i, (obs, reward, terminated, truncated, info) in enumerate(results):
            self._last_obs[i] = obs
            rewards[i], terminations[i], truncations[i] = reward, terminated, truncated
            infos = self._add_info(infos, info, i)
        return tuple(self._last_obs), rewards, terminations, truncations, infos

    async def _step_one(self, i, action):
        if self.autoreset_mode == AutoresetMode.NEXT_STEP and self._ended[i]:
            obs, info = await self._reset_one(i, None, None)
            return obs, 0.0, False, False, info
        obs, reward, terminated, truncated, info = await self._episodes[i].step(action)
        info["episode"] = self._episodes[i].id  # as in a reset's info: which trajectory this step belongs to
        self._ended[i] = terminated or truncated
        if self.autoreset_mode == AutoresetMode.SAME_STEP and self._ended[i]:
            final_obs, final_info = obs, info
            obs, info = await self._reset_one(i, None, None)
            info = {**info, "final_obs": final_obs, "final_info": final_info}
        return obs, float(reward), bool(terminated), bool(truncated), info

    def close_extras(self, **kwargs) -> None:
        if self._loop.is_closed():
            return
        try:
            self._run(self._close_all())
        finally:
            self._loop.close()

    async def _close_all(self):
        try:
            await asyncio.gather(*(self._close_one(i) for i in range(self.num_envs)), return_exceptions=True)
        finally:
            await self.client.aclose()
            await asyncio.sleep(0)  # lets the cancelled reader task finish before the loop closes
