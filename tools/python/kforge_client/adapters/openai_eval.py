"""An evaluation loop: an OpenAI-compatible chat endpoint (vLLM, SGLang, an API) plays episodes.

Each turn the model gets the conversation and the kforge tool schemas; every tool call it makes
is one step (the observation goes back as a ``tool`` message); a reply without tool calls is
stepped as text (a Hermes ``<tool_call>`` inside is honoured, otherwise the turn is spent and the
observation says why). Standard library HTTP only.
"""
import dataclasses
import json
import urllib.request

from .. import KernelEnv


@dataclasses.dataclass
class EpisodeResult:
    task: str
    seed: object
    episode_reward: float
    termination_reason: object
    turns: int
    transcript: list
    info: dict = None  # the last step's info (its "reward": the rule and figures of the final reward)
    prompt: str = None  # the task prompt (reset's observation)


class ChatEvaluator:
    def __init__(self, chat_url, model, client, api_key=None, temperature=0.0, max_tokens=4096, http_timeout=600.0):
        self.chat_url = chat_url.rstrip("/")
        if not self.chat_url.endswith("/chat/completions"):
            self.chat_url += "/chat/completions"
        self.model = model
        self.client = client
        self.api_key = api_key
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.http_timeout = http_timeout

    def _chat(self, messages, tools):
        body = json.dumps({"model": self.model, "messages": messages, "tools": tools, "tool_choice": "auto",
                           "temperature": self.temperature, "max_tokens": self.max_tokens}).encode()
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        req = urllib.request.Request(self.chat_url, data=body, headers=headers, method="POST")
        with urllib.request.urlopen(req, timeout=self.http_timeout) as resp:
            return json.loads(resp.read())["choices"][0]["message"]

    def run_episode(self, task, seed=None, options=None, system_prompt=None):
        env = KernelEnv(self.client, task=task)
        obs, info = env.reset(seed=seed, options=options)
        obs_prompt = obs
        tools = info.get("tools") or self.client.tools()
        messages = ([{"role": "system", "content": system_prompt}] if system_prompt else []) + \
                   [{"role": "user", "content": obs}]
        reward_sum, done, turns, last_info = 0.0, False, 0, info
        try:
            while not done:
                msg = self._chat(messages, tools)
                calls = msg.get("tool_calls") or []
                messages.append({k: v for k, v in msg.items() if k in ("role", "content", "tool_calls")})
                if not calls:
                    obs, r, term, trunc, last_info = env.step(msg.get("content") or "")
                    reward_sum += r
                    turns += 1
                    done = term or trunc
                    messages.append({"role": "user", "content": obs})
                    continue
                for call in calls:
                    obs, r, term, trunc, last_info = env.step(call)
                    reward_sum += r
                    turns += 1
                    messages.append({"role": "tool", "tool_call_id": call.get("id", ""), "content": obs})
                    done = term or trunc
                    if done:
                        break
        finally:
            env.close()
        return EpisodeResult(task, seed, last_info.get("episode_reward", reward_sum),
                             last_info.get("termination_reason"), turns, messages, last_info, prompt=obs_prompt)

    def evaluate(self, tasks, seeds=(0,), options=None):
        """Every task with every seed; a list of EpisodeResult."""
        return [self.run_episode(t, s, options) for t in tasks for s in seeds]
