"""The shipped scripted policies (datasets/samples/policies/*/policy.yaml, format in
env/episode/ENVIRONMENT.md) read in Python, for the adapter tests and benchmarks: each turn becomes
the action the C++ ScriptedPolicy sends, as a tool-call map, or as the assistant text an LLM would
write (a Hermes <tool_call>) for text-only trainers."""
import json
import os

import yaml

SOURCE_DIR = os.environ.get("KFORGE_SOURCE_DIR", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
POLICIES = os.path.join(SOURCE_DIR, "datasets", "samples", "policies")


class Policy:
    def __init__(self, name):
        self.name = name
        self.dir = os.path.join(POLICIES, name)
        with open(os.path.join(self.dir, "policy.yaml")) as f:
            spec = yaml.safe_load(f)
        self.task = spec["task"]
        self.loop = bool(spec.get("loop", False))
        self.turns = [self._action(t) for t in spec["turns"]]

    def _action(self, turn):
        if "write" in turn:
            if "content" in turn:
                content = turn["content"]
            else:
                with open(os.path.join(self.dir, turn["from"])) as f:
                    content = f.read()
            return {"name": "write_file", "arguments": {"path": turn["write"], "content": content}}
        if "call" in turn:
            return {"name": turn["call"], "arguments": turn.get("arguments") or {}}
        if "text" in turn:
            return turn["text"]
        return turn["action"]

    def actions(self, limit=None):
        """The actions in order (repeated when the policy loops), at most ``limit``."""
        out = []
        while True:
            for a in self.turns:
                if limit is not None and len(out) >= limit:
                    return out
                out.append(a)
            if not self.loop:
                return out

    def texts(self, limit=None):
        """The same actions as assistant text: a tool-call map becomes a Hermes <tool_call>."""
        return [as_text(a) for a in self.actions(limit)]


def as_text(action):
    if isinstance(action, str):
        return action
    return "<tool_call>" + json.dumps(action) + "</tool_call>"
