"""A kforge episode as a verifiers environment: ``KforgeEnv``, a ``verifiers.MultiTurnEnv`` (verifiers 0.3.1).

One rollout is one kforge episode. ``setup_state`` opens it (``reset(task, seed, options)`` from the
dataset row's ``info``: ``kforge_task``, ``kforge_seed``) and puts the task's rendered prompt in place of the row's placeholder; each
model turn is the policy's: every tool call in it is one kforge step, answered by a ``tool`` message
holding the observation, and a reply without tool calls is stepped as text (a Hermes
``<tool_call>`` in it is honoured, otherwise the turn is spent), answered by a ``user`` message.
When kforge ends the episode (a submission, or a limit: ``max_turns`` is passed to kforge as the
episode option), the last observations are the ``final_env_response`` and the rollout stops. A
cleanup handler closes the episode (its trajectory is recorded); the rubric's reward is the
episode's (``state["kforge"]``: the rule and measurements behind it), ``unfinished_reward`` for a
rollout verifiers stopped first (its timeout, a token limit, a lost episode).

``load_environment(endpoint=..., tasks=... | split=..., ...)`` is the verifiers entry
(``verifiers.load_environment("kforge_client.adapters.verifiers_env", endpoint=...)``). Without
verifiers installed, importing this module raises ImportError saying so.
"""
import asyncio
import time

try:
    import verifiers as vf
    from datasets import Dataset
    from verifiers.types import ToolMessage, UserMessage
except ImportError as e:  # pragma: no cover - exercised by the test that hides verifiers
    raise ImportError(f"kforge_client.adapters.verifiers_env needs verifiers ({e}); install it with "
                      "`pip install 'kforge-client[verifiers]'` (verifiers==0.3.1)") from e

from ..async_client import AsyncClient
from ..client import Client
from ..errors import KforgeError, ServerUnavailable

UNFINISHED_REWARD = -1.0  # configs/reward.yaml's no_submission default
PLACEHOLDER = "kforge task {task}: the prompt is the server's, put in place when the rollout starts"


def _text(content):
    if isinstance(content, str) or content is None:
        return content or ""
    return "".join(getattr(p, "text", "") or (p.get("text", "") if isinstance(p, dict) else "") for p in content)


class KforgeEnv(vf.MultiTurnEnv):
    """``KforgeEnv(endpoint, tasks, seeds=(None,), options=None, max_turns=None, unfinished_reward=-1.0,
    timeout=300.0, busy_timeout=10.0, **MultiTurnEnv kwargs)``: a dataset row per (task, seed)."""

    def __init__(self, endpoint, tasks, seeds=(None,), options=None, max_turns=None,
                 unfinished_reward=UNFINISHED_REWARD, timeout=300.0, busy_timeout=10.0, **kwargs) -> None:
        self.endpoint = endpoint
        self.options = dict(options or {})
        if max_turns is not None:
            self.options["max_turns"] = int(max_turns)
        self.client_timeout = timeout
        self.client_busy_timeout = busy_timeout
        self.unfinished_reward = float(unfinished_reward)
        with Client(endpoint, timeout=timeout) as c:
            schemas = c.tools()
        tool_defs = [{k: s["function"][k] for k in ("name", "description", "parameters")} for s in schemas]
        rows = [{"prompt": [{"role": "user", "content": PLACEHOLDER.format(task=t)}], "answer": "",
                 "info": {"kforge_task": t, "kforge_seed": s}} for t in tasks for s in seeds]
        kwargs.setdefault("dataset", Dataset.from_list(rows))
        kwargs.setdefault("rubric", KforgeRubric(self.unfinished_reward))
        self._episodes = {}  # trajectory id -> AsyncEpisode
        self._clients = {}   # event loop -> AsyncClient
        # verifiers checks its max_turns before answering a model turn, kforge after stepping it: one more
        # for verifiers lets kforge step the last turn and end the episode itself (no_submission, evidence).
        super().__init__(max_turns=int(max_turns) + 1 if max_turns is not None else -1, tool_defs=tool_defs, **kwargs)

    def _client(self):
        loop = asyncio.get_running_loop()
        if loop not in self._clients:
            for stale in [k for k in self._clients if k.is_closed()]:
                del self._clients[stale]
            self._clients[loop] = AsyncClient(self.endpoint, timeout=self.client_timeout,
                                              busy_timeout=self.client_busy_timeout)
        return self._clients[loop]

    async def setup_state(self, state, **kwargs) -> vf.State:
        info = state["info"]
        task, seed = info["kforge_task"], info.get("kforge_seed")  # info["task"] means something else to verifiers
        facts = state["kforge"] = {"episode": None, "task": task, "seed": seed, "turn": 0,
                                   "done": False, "termination_reason": None, "episode_reward": 0.0,
                                   "reward": None, "lost": None, "steps": []}
        try:
            ep = await self._client().reset(task, seed=seed, options=self.options or None)
        except (KforgeError, ServerUnavailable) as e:
            raise vf.InfraError(f"kforge reset of {task} failed: {e}") from e
        self._episodes[state["trajectory_id"]] = ep
        facts.update(episode=ep.id, seed=ep.info.get("seed"))
        prompt = list(state["prompt"])
        last_user = max(i for i, m in enumerate(prompt) if m.role == "user")
        prompt[last_user] = UserMessage(content=ep.observation)
        state["prompt"] = prompt
        return state

    async def _step(self, state, action):
        """One kforge step: (observation, whether the rollout must stop)."""
        facts = state["kforge"]
        ep = self._episodes[state["trajectory_id"]]
        started = time.monotonic()
        try:
            obs, _, terminated, truncated, info = await ep.step(action)
        except KforgeError as e:
            if e.kind == "busy":  # nothing was done: the model may call again
                return f"error: the kforge server is busy ({e.message}); call the tool again", False
            facts["lost"] = f"{e.kind}: {e.message}"
            return f"error: the kforge episode was lost ({facts['lost']})", True
        except ServerUnavailable as e:  # never resent: it may have run
            facts["lost"] = f"server unavailable: {e}"
            return f"error: the kforge episode was lost ({facts['lost']})", True
        facts.update(turn=info.get("turn"), done=bool(terminated or truncated),
                     termination_reason=info.get("termination_reason"),
                     episode_reward=float(info.get("episode_reward", 0.0) or 0.0))
        facts["steps"].append({"tool": info.get("tool"), "tool_ok": info.get("tool_ok"), "verdict": info.get("verdict"),
                               "latency_s": time.monotonic() - started})
        if facts["done"]:
            facts["reward"] = info.get("reward")
        return obs, facts["done"]

    async def env_response(self, messages, state, **kwargs) -> vf.Messages:
        last = messages[-1]
        calls = getattr(last, "tool_calls", None) or []
        if not calls:
            obs, stop = await self._step(state, _text(getattr(last, "content", "")))
            out = [UserMessage(content=obs)]
        else:
            out, stop = [], False
            for call in calls:
                if stop:  # every tool call gets its answer
                    out.append(ToolMessage(tool_call_id=call.id, content="not run: the kforge episode is over"))
                    continue
                action = {"type": "function", "function": {"name": call.name, "arguments": call.arguments}}
                obs, stop = await self._step(state, action)
                out.append(ToolMessage(tool_call_id=call.id, content=obs))
        if stop:
            state["final_env_response"] = out
        return out

    @vf.cleanup
    async def close_episode(self, state) -> None:
        ep = self._episodes.pop(state.get("trajectory_id"), None)
        if ep is not None:
            try:
                await ep.close()
            except (KforgeError, ServerUnavailable):
                pass  # lost already: the facts are what is left


class KforgeRubric(vf.Rubric):
    """Reward: the kforge episode's (``unfinished_reward`` when it did not end in kforge); metrics:
    ``kforge_turns``, ``kforge_finished``, ``kforge_speedup`` (over eager, 0 when not timed)."""

    def __init__(self, unfinished_reward=UNFINISHED_REWARD, **kwargs) -> None:
        super().__init__(**kwargs)
        self.unfinished_reward = float(unfinished_reward)
        self.add_reward_func(self.kforge_reward)
        self.add_metric(self.kforge_turns)
        self.add_metric(self.kforge_finished)
        self.add_metric(self.kforge_speedup)

    async def kforge_reward(self, state) -> float:
        facts = state.get("kforge") or {}
        if facts.get("done") and not facts.get("lost"):
            return facts["episode_reward"]
        return self.unfinished_reward

    async def kforge_turns(self, state) -> float:
        return float((state.get("kforge") or {}).get("turn") or 0)

    async def kforge_finished(self, state) -> float:
        facts = state.get("kforge") or {}
        return 1.0 if facts.get("done") and not facts.get("lost") else 0.0

    async def kforge_speedup(self, state) -> float:
        reward = (state.get("kforge") or {}).get("reward") or {}
        return float(((reward.get("eager") or {}).get("speedup") or {}).get("point") or 0.0)


def load_environment(endpoint="tcp://127.0.0.1:5555", tasks=None, split="train", limit=None, seeds=(None,),
                     options=None, max_turns=None, **kwargs) -> KforgeEnv:
    """The verifiers entry: ``tasks`` (names), or the server's tasks of ``split`` (at most ``limit``)."""
    if tasks is None:
        with Client(endpoint) as c:
            page = c.tasks(split=split, limit=limit or 1000)
        tasks = [t["name"] for t in page["tasks"]]
    elif isinstance(tasks, str):
        tasks = [t for t in tasks.split(",") if t]
    if not tasks:
        raise ValueError(f"kforge: no tasks to play (split {split!r} has none on {endpoint})")
    return KforgeEnv(endpoint, list(tasks), seeds=tuple(seeds), options=options, max_turns=max_turns, **kwargs)


__all__ = ["KforgeEnv", "KforgeRubric", "load_environment"]
