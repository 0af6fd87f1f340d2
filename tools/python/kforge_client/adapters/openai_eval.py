"""An evaluation loop: an OpenAI-compatible chat endpoint (vLLM, SGLang, an API) plays episodes.

Each turn the model gets the conversation and the kforge tool schemas; every tool call it makes
is one step (the observation goes back as a ``tool`` message); a reply without tool calls is
stepped as text (a Hermes ``<tool_call>`` inside is honoured, otherwise the turn is spent and the
observation says why). Standard library HTTP only.
"""
import dataclasses
import json
import urllib.error
import urllib.parse
import urllib.request

from .. import KernelEnv
from ..errors import KforgeError, ServerUnavailable

# Error kinds that say nothing of the episode (the server was full, stopping, or lost it): the
# episode could not be played and is worth playing again. Any other error reply to a step (an
# `internal`, a `bad_params` on what the model sent) ended the episode: StepError.
TRANSIENT_KINDS = frozenset({"busy", "shutting_down", "cancelled", "unknown_episode", "episode_busy"})
EXCERPT = 300  # characters of an endpoint's reply shown in an error


class ChatEndpointError(ConnectionError):
    """The chat endpoint failed: its URL, the HTTP status (None: no reply) and an excerpt of the body."""

    def __init__(self, url, status, detail) -> None:
        super().__init__(f"{url}: " + (f"HTTP {status}: " if status is not None else "") + detail)
        self.url, self.status = url, status


class StepError(Exception):
    """The server answered one of the episode's steps with an error: the episode ended there, after
    `turns` turns. `error` is the KforgeError."""

    def __init__(self, error, turns) -> None:
        super().__init__(f"step {turns + 1} failed: {error}")
        self.error, self.turns = error, turns


def excerpt(body) -> str:
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body)
    text = " ".join(text.split())
    return repr(text[:EXCERPT] + ("..." if len(text) > EXCERPT else ""))


def http_url(url) -> str:
    """The URL if it is http(s) with a host; ValueError otherwise (file://, ftp://, a bare path)."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"the chat URL must be http:// or https:// with a host, not {url!r}")
    return url


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
    def __init__(self, chat_url, model, client, api_key=None, temperature=0.0, max_tokens=4096, http_timeout=600.0) -> None:
        self.chat_url = http_url(chat_url).rstrip("/")
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
        try:
            with urllib.request.urlopen(req, timeout=self.http_timeout) as resp:
                status, body = resp.status, resp.read()
        except urllib.error.HTTPError as e:
            raise ChatEndpointError(self.chat_url, e.code, excerpt(e.read() or e.reason)) from None
        except (urllib.error.URLError, OSError) as e:  # refused, unreachable, timed out
            raise ChatEndpointError(self.chat_url, None, f"no reply ({getattr(e, 'reason', e)})") from None
        try:
            message = json.loads(body)["choices"][0]["message"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise ChatEndpointError(self.chat_url, status, "the reply is not an OpenAI chat completion with a "
                                    f"message: {excerpt(body)}") from None
        if not isinstance(message, dict):
            raise ChatEndpointError(self.chat_url, status, f"the reply's message is not an object: {excerpt(body)}")
        return message

    def run_episode(self, task, seed=None, options=None, system_prompt=None) -> EpisodeResult:
        env = KernelEnv(self.client, task=task)
        obs, info = env.reset(seed=seed, options=options)
        obs_prompt = obs
        tools = info.get("tools") or self.client.tools()
        messages = ([{"role": "system", "content": system_prompt}] if system_prompt else []) + \
                   [{"role": "user", "content": obs}]
        reward_sum, done, turns, last_info = 0.0, False, 0, info
        ended = False
        try:
            while not done:
                msg = self._chat(messages, tools)
                calls = msg.get("tool_calls") or []
                messages.append({k: v for k, v in msg.items() if k in ("role", "content", "tool_calls")})
                for call in (calls if calls else [msg.get("content") or ""]):
                    try:
                        obs, r, term, trunc, last_info = env.step(call)
                    except KforgeError as e:
                        if e.kind in TRANSIENT_KINDS:
                            raise
                        raise StepError(e, turns) from e
                    reward_sum += r
                    turns += 1
                    messages.append({"role": "tool", "tool_call_id": call.get("id", ""), "content": obs} if calls
                                    else {"role": "user", "content": obs})
                    done = term or trunc
                    if done:
                        break
            ended = True
        finally:
            if ended:
                env.close()
            else:
                self._abandon(env)
        return EpisodeResult(task, seed, last_info.get("episode_reward", reward_sum),
                             last_info.get("termination_reason"), turns, messages, last_info, prompt=obs_prompt)

    def _abandon(self, env):
        """Closes an episode that failed, briefly (a dead server would cost a whole client timeout
        again) and quietly (the failure that got here is the one to report); the server reaps an
        episode it never hears of again after sessions.idle_timeout_s."""
        if env.episode is not None:
            try:
                self.client.close_episode(env.episode, timeout=min(5.0, self.client.timeout))
            except (KforgeError, ServerUnavailable):
                pass
            env.episode = None

    def evaluate(self, tasks, seeds=(0,), options=None) -> list[EpisodeResult]:
        """Every task with every seed; a list of EpisodeResult."""
        return [self.run_episode(t, s, options) for t in tasks for s in seeds]
