"""kforge's tools as verl tools: ``KforgeTool``, a ``verl.tools.base_tool.BaseTool`` (verl 0.9.1).

verl's multi-turn ``ToolAgentLoop`` builds one tool object per entry of a tool config YAML
(``tools/python/examples/verl_tool_config.yaml``: one entry per kforge tool, all of class
``kforge_client.adapters.verl_tool.KforgeTool``) and, for every tool call the model makes, runs
``create(create_kwargs=...)`` -> ``execute(instance_id, arguments, agent_data=...)`` ->
``release(instance_id)``. An instance id therefore lives for one call, while a kforge episode
lives for a whole trajectory. So:

- the episode belongs to the trajectory: verl's ``agent_data`` (one per trajectory) when verl passes
  it, otherwise the instance id itself (a caller that keeps one instance for a whole rollout, as
  verl's earlier SGLang rollout did); it is opened by the first ``execute`` of that trajectory
  with ``reset(task, seed, options)`` from the instance's ``create_kwargs``;
- the episode's facts (id, task, seed, turn, termination, reward and its evidence) are written to
  ``agent_data.extra_fields["kforge"]``; verl hands ``extra_fields`` to the reward function as
  ``extra_info``, and ``compute_score`` (below) turns them into the reward, closing the episode;
- calls of one trajectory run one at a time, in order (a lock per episode), since a kforge
  episode takes one step at a time.

``verl_rows`` builds verl dataset rows (``prompt`` = the task's rendered prompt, ``extra_info.tools_kwargs``
for every kforge tool). Without verl installed, importing this module raises ImportError saying so.
"""
import asyncio
import collections
import time
import uuid
from typing import Any

try:
    from verl.tools.base_tool import BaseTool
    from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse
    from verl.utils.rollout_trace import rollout_trace_op
except ImportError as e:  # pragma: no cover - exercised by the test that hides verl
    raise ImportError(f"kforge_client.adapters.verl_tool needs verl ({e}); install it with "
                      "`pip install 'kforge-client[verl]'` (verl==0.9.1)") from e

from ..async_client import AsyncClient
from ..client import Client
from ..errors import KforgeError, ServerUnavailable

CONFIG_KEYS = {"type", "endpoint", "task", "seed", "options", "timeout", "busy_timeout"}
CREATE_KEYS = {"task", "seed", "options"}
# What a trajectory that never finished earns: configs/reward.yaml's no_submission default.
UNFINISHED_REWARD = -1.0
MAX_TRAJECTORIES = 65536  # instance-keyed episodes remembered; the oldest is forgotten beyond (never closed by it)
ATTR = "_kforge_trajectory"  # where an AgentData keeps its episode


class _Trajectory:
    """One trajectory's kforge episode, shared by every tool object of the process."""

    def __init__(self, endpoint, params) -> None:
        self.endpoint = endpoint
        self.params = params
        self.lock = asyncio.Lock()
        self.episode = None       # AsyncEpisode once opened
        self.prompt = None
        self.facts = {"endpoint": endpoint, "episode": None, "task": params.get("task"), "seed": params.get("seed"),
                      "turn": 0, "done": False, "termination_reason": None, "episode_reward": 0.0,
                      "reward": None, "lost": None}


_TRAJECTORIES = collections.OrderedDict()  # instance id -> _Trajectory (the direct lifecycle)
_INSTANCES = {}                            # instance id -> create params
_CLIENTS = {}                              # (endpoint, event loop) -> AsyncClient


def _client(endpoint, timeout, busy_timeout):
    loop = asyncio.get_running_loop()
    key = (endpoint, loop)
    if key not in _CLIENTS:
        for stale in [k for k in _CLIENTS if k[1].is_closed()]:
            del _CLIENTS[stale]
        _CLIENTS[key] = AsyncClient(endpoint, timeout=timeout, busy_timeout=busy_timeout)
    return _CLIENTS[key]


class KforgeTool(BaseTool):
    """One kforge tool (``write_file``, ``compile``, ``submit``, ...) named by its ``tool_schema``.

    ``config`` (the YAML entry's ``config``): ``type: native`` (verl's), ``endpoint`` (required),
    and defaults for episodes whose ``create_kwargs`` lack them: ``task``, ``seed``, ``options``;
    ``timeout`` and ``busy_timeout`` of the client (seconds). Unknown keys are an error.
    """

    def __init__(self, config: dict, tool_schema: OpenAIFunctionToolSchema) -> None:
        config = dict(config or {})
        unknown = sorted(set(config) - CONFIG_KEYS)
        if unknown:
            raise ValueError(f"KforgeTool config: unknown key(s) {unknown}; known: {sorted(CONFIG_KEYS)}")
        if not config.get("endpoint"):
            raise ValueError("KforgeTool config: `endpoint` (the kforge server, e.g. tcp://127.0.0.1:5555) is required")
        if tool_schema is None:
            raise ValueError("KforgeTool needs its tool_schema (the kforge server's schema of the function; "
                             "tools/python/examples/verl_tool_config.yaml has them all)")
        super().__init__(config, tool_schema)
        self.endpoint = config["endpoint"]
        self.defaults = {k: config[k] for k in CREATE_KEYS if config.get(k) is not None}
        self.timeout = float(config.get("timeout", 300.0))
        self.busy_timeout = float(config.get("busy_timeout", 10.0))

    async def create(self, instance_id=None, **kwargs) -> tuple[str, ToolResponse]:
        """Registers an instance; ``create_kwargs`` (verl's) or plain keywords: ``task``, ``seed``, ``options``."""
        params = dict(kwargs.pop("create_kwargs", None) or {})
        params.update({k: v for k, v in kwargs.items() if k in CREATE_KEYS})
        unknown = sorted(set(params) - CREATE_KEYS)
        if unknown:
            raise ValueError(f"KforgeTool.create: unknown create_kwargs {unknown}; known: {sorted(CREATE_KEYS)}")
        instance_id = instance_id or uuid.uuid4().hex
        _INSTANCES[instance_id] = {**self.defaults, **params}
        return instance_id, ToolResponse()

    def _trajectory(self, instance_id, agent_data):
        # verl's AgentData is the trajectory (its request_id is not: with full_determinism it is
        # "det-<index in batch>", the same in every training step), so the episode rides on it and
        # goes when it goes; without agent_data the instance id keys it, in a bounded table.
        t = getattr(agent_data, ATTR, None) if agent_data is not None else _TRAJECTORIES.get(instance_id)
        if t is None:
            params = _INSTANCES.get(instance_id)
            if params is None:
                raise ValueError(f"KforgeTool.execute: unknown instance {instance_id!r} (create it first)")
            if not params.get("task"):
                raise ValueError("KforgeTool: no task: give create_kwargs.task (verl_rows writes it) or config.task")
            t = _Trajectory(self.endpoint, params)
            if agent_data is not None:
                setattr(agent_data, ATTR, t)
                agent_data.extra_fields["kforge"] = t.facts  # the same dict: later steps update it in place
            else:
                _TRAJECTORIES[instance_id] = t
                while len(_TRAJECTORIES) > MAX_TRAJECTORIES:
                    _TRAJECTORIES.popitem(last=False)
        return t

    @rollout_trace_op
    async def execute(self, instance_id: str, parameters: dict, **kwargs) -> tuple[ToolResponse, float, dict]:
        """One kforge step of this tool with ``parameters``: (the observation, the step's reward, metrics)."""
        t = self._trajectory(instance_id, kwargs.get("agent_data"))
        async with t.lock:
            return await self._step(t, parameters)

    async def _step(self, t, parameters):
        facts = t.facts
        if facts["lost"] or facts["done"]:
            why = f"lost ({facts['lost']})" if facts["lost"] else f"over ({facts['termination_reason']})"
            return ToolResponse(text=f"error: the kforge episode is {why}; no more tool calls count"), 0.0, dict(facts)
        client = _client(self.endpoint, self.timeout, self.busy_timeout)
        started = time.monotonic()
        try:
            if t.episode is None:
                t.episode = await client.reset(t.params["task"], seed=t.params.get("seed"), options=t.params.get("options"))
                t.prompt = t.episode.observation
                facts.update(episode=t.episode.id, seed=t.episode.info.get("seed"))
            obs, reward, terminated, truncated, info = await t.episode.step({"name": self.name, "arguments": parameters})
        except KforgeError as e:
            if e.kind == "busy":  # nothing was done: the model may call again
                return ToolResponse(text=f"error: the kforge server is busy ({e.message}); call the tool again"), 0.0, dict(facts)
            facts["lost"] = f"{e.kind}: {e.message}"
            return ToolResponse(text=f"error: the kforge episode was lost ({facts['lost']})"), 0.0, dict(facts)
        except ServerUnavailable as e:  # a lost step is never resent: it may have run
            facts["lost"] = f"server unavailable: {e}"
            return ToolResponse(text=f"error: the kforge episode was lost ({facts['lost']})"), 0.0, dict(facts)
        facts.update(turn=info.get("turn"), done=bool(terminated or truncated),
                     termination_reason=info.get("termination_reason"),
                     episode_reward=float(info.get("episode_reward", 0.0) or 0.0))
        if facts["done"]:
            facts["reward"] = info.get("reward")
        metrics = {**facts, "tool": self.name, "verdict": info.get("verdict"), "tool_ok": info.get("tool_ok"),
                   "latency_s": time.monotonic() - started}
        return ToolResponse(text=obs), float(reward), metrics

    async def calc_reward(self, instance_id: str, **kwargs) -> float:
        """The episode's reward so far: 0 until it ends, then kforge's final reward."""
        agent_data = kwargs.get("agent_data")
        t = getattr(agent_data, ATTR, None) if agent_data is not None else _TRAJECTORIES.get(instance_id)
        return 0.0 if t is None else t.facts["episode_reward"]

    async def release(self, instance_id: str, **kwargs) -> None:
        """Forgets the instance; an episode keyed by this very instance id is closed (its trajectory recorded)."""
        _INSTANCES.pop(instance_id, None)
        t = _TRAJECTORIES.pop(instance_id, None)
        if t is not None and t.episode is not None:
            async with t.lock:
                try:
                    await t.episode.close()
                except (KforgeError, ServerUnavailable):
                    pass  # lost already: nothing left to close


def episode_facts(instance_id) -> dict[str, Any] | None:
    """The facts of the episode keyed by ``instance_id`` (the direct lifecycle), or None."""
    t = _TRAJECTORIES.get(instance_id)
    return None if t is None else dict(t.facts, prompt=t.prompt)


async def compute_score(data_source=None, solution_str=None, ground_truth=None, extra_info=None,
                        unfinished_reward=UNFINISHED_REWARD, **kwargs) -> dict[str, Any]:
    """verl's reward function (``reward.custom_reward_function``, async): the episode's reward and evidence.

    Reads ``extra_info["kforge"]`` (written by ``KforgeTool``), closes the episode so its trajectory
    is recorded, and returns ``{"score", "rule", "termination_reason", "turns", "speedup", "lost"}``.
    A trajectory that ended without a submission or truncation (verl's own turn or length limit, a
    lost episode) scores ``unfinished_reward``; one that never called a tool too.
    """
    facts = (extra_info or {}).get("kforge")
    if not facts or not facts.get("episode"):
        return {"score": float(unfinished_reward), "rule": "no_episode", "termination_reason": None, "turns": 0,
                "speedup": None, "lost": None}
    try:
        async with AsyncClient(facts["endpoint"], timeout=30.0) as c:
            await c.call("close", episode=facts["episode"])
    except KforgeError as e:
        if e.kind != "unknown_episode":  # closed already (a finished episode may be reaped, or closed twice)
            raise
    except ServerUnavailable:
        pass  # the server is gone: the facts are what is left
    reward = facts.get("reward") or {}
    finished = facts.get("done") and not facts.get("lost")
    speedup = ((reward.get("eager") or {}).get("speedup") or {}).get("point")
    return {"score": float(facts["episode_reward"]) if finished else float(unfinished_reward),
            "rule": reward.get("rule") if finished else "unfinished", "termination_reason": facts.get("termination_reason"),
            "turns": facts.get("turn") or 0, "speedup": speedup, "lost": facts.get("lost")}


def verl_rows(endpoint, tasks, seeds=(None,), options=None, tool_names=None, data_source="kforge") -> list[dict[str, Any]]:
    """verl dataset rows, one per (task, seed): the task's prompt as the user message and the
    ``create_kwargs`` of every kforge tool in ``extra_info.tools_kwargs``; ``agent_name: tool_agent``.

    The prompt is the server's (one ``reset`` and ``close`` per task: the prompt does not depend on
    the seed, which only salts the hidden input draws)."""
    rows = []
    with Client(endpoint) as client:
        names = tool_names or [t["function"]["name"] for t in client.tools()]
        for task in tasks:
            r = client.reset(task, options=options)
            client.close_episode(r["episode"])
            for seed in seeds:
                create = {"task": task, "seed": seed, "options": options}
                rows.append({"data_source": data_source, "agent_name": "tool_agent",
                             "prompt": [{"role": "user", "content": r["observation"]}],
                             "reward_model": {"style": "rule", "ground_truth": ""},
                             "extra_info": {"index": len(rows), "task": task, "seed": seed,
                                            "tools_kwargs": {n: {"create_kwargs": create} for n in names}}})
    return rows

