"""What the trainer-adapter suites share: a real `kforge serve` (test_client.Server), the shipped
scripted policies as tool calls, tasks whose stored baselines make every reward tier reachable, and
a scripted OpenAI-compatible chat endpoint."""
import http.server
import json
import os
import sys
import threading

import yaml

sys.path.insert(0, os.path.dirname(__file__))
from client_harness import CAND, SOURCE_DIR, Server, StandInChat, candidate, reward_config_rescaling  # noqa: E402,F401

POLICIES = os.path.join(SOURCE_DIR, "datasets", "samples", "policies")
SAMPLES = os.path.join(SOURCE_DIR, "datasets", "samples")
HERMES = "<tool_call>"


def policy_calls(name):
    """A shipped policy (datasets/samples/policies/NAME/policy.yaml) as (task, [(tool, arguments)]); a
    text turn holding a Hermes <tool_call> becomes that call."""
    folder = os.path.join(POLICIES, name)
    with open(os.path.join(folder, "policy.yaml")) as f:
        p = yaml.safe_load(f)
    calls = []
    for turn in p["turns"]:
        if "write" in turn:
            content = turn.get("content")
            if content is None:
                with open(os.path.join(folder, turn["from"])) as f:
                    content = f.read()
            calls.append(("write_file", {"path": turn["write"], "content": content}))
        elif "call" in turn:
            calls.append((turn["call"], dict(turn.get("arguments") or {})))
        elif "text" in turn and HERMES in turn["text"]:
            body = json.loads(turn["text"].split(HERMES, 1)[1].split("</tool_call>", 1)[0])
            calls.append((body["name"], dict(body.get("arguments") or {})))
        else:
            raise ValueError(f"policy {name}: turn {turn} is not a tool call")
    return p["task"], calls


# Reward tiers through the server: the policy, and the task's stored baselines (eager_ms, compile_ms)
# the copy served gets. gelu_scale_residual/fused is ~3.2x eager on an H200: against a torch.compile
# ten times faster than eager it stays at tier 2; against one as fast as eager it reaches tier 3.
TIERS = {-1: ("compile_error", None), 1: ("linear_relu_tiled", None), 2: ("gelu_fused", (1.0, 0.1)),
         3: ("gelu_fused", (1.0, 1.0))}


def tier_task_dirs(tmp_path):
    """{tier: task name}, the tasks written under tmp_path/tasks (copies of the samples, renamed, with
    the baselines of TIERS), for a server config `tasks: {samples: false, dirs: [that folder]}`."""
    folder = tmp_path / "tasks"
    folder.mkdir(exist_ok=True)
    names = {}
    for tier, (policy, baselines) in TIERS.items():
        task, _ = policy_calls(policy)
        with open(os.path.join(SAMPLES, task + ".yaml")) as f:
            spec = yaml.safe_load(f)
        name = f"{task}_reward{tier}".replace("-", "m")
        spec["id"] = name
        if baselines:
            # Synthetic times keep the sample's GPU and method (a spec needs both); gpu_server's
            # reward config rescales another model's baseline, so tier 3 is reachable on any GPU.
            spec["baselines"].update(eager_ms=baselines[0], compile_ms=baselines[1])
        with open(folder / f"{name}.yaml", "w") as f:
            yaml.safe_dump(spec, f, sort_keys=False)
        names[tier] = name
    return folder, names


def gpu_server(tmp_path):
    """A server with every visible GPU and the tier tasks; (server, {tier: task}), or (None, why)."""
    folder, names = tier_task_dirs(tmp_path)
    s = Server(tmp_path, scheduler={"gpus": -1}, tasks={"samples": False, "dirs": [str(folder)]},
               reward_config=reward_config_rescaling(tmp_path))
    from kforge_client import Client
    with Client(s.endpoint) as c:
        gpus = c.health()["gpus"]
    if not gpus:
        line = s.line.strip()
        s.stop()
        return None, f"no GPU lane on this machine ({line})"
    return s, names


class ScriptedChat(StandInChat):
    """An OpenAI-compatible /chat/completions endpoint replaying `script` (assistant messages) in order,
    one per request, per conversation (the first user message keys it); records the requests."""
    scripts = {}     # a text in the first user message -> [message, ...]
    before = {}      # (that text, turn) -> a callable run before answering that turn
    requests = []
    lock = threading.Lock()

    def answer(self, body):
        first = next(m["content"] for m in body["messages"] if m["role"] == "user")
        with ScriptedChat.lock:
            ScriptedChat.requests.append(body)
            key = next(k for k in ScriptedChat.scripts if k in first)
            turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
            script = ScriptedChat.scripts[key]
            message = script[turn] if turn < len(script) else {"role": "assistant", "content": "I am done."}
            hook = ScriptedChat.before.pop((key, turn), None)
        if hook:
            hook()
        return message


def start_chat(scripts, before=None):
    """Starts ScriptedChat with `scripts`; (base URL .../v1, httpd) — call httpd.shutdown()."""
    ScriptedChat.scripts = scripts
    ScriptedChat.before = dict(before or {})
    ScriptedChat.requests = []
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), ScriptedChat)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{httpd.server_address[1]}/v1", httpd


def tool_message(i, name, arguments):
    """An assistant message with one OpenAI tool call."""
    return {"role": "assistant", "content": None,
            "tool_calls": [{"id": f"call_{i}", "type": "function",
                            "function": {"name": name, "arguments": json.dumps(arguments)}}]}


def chat_script(calls):
    """A policy's calls as assistant messages, one tool call each."""
    return [tool_message(i, name, args) for i, (name, args) in enumerate(calls)]

