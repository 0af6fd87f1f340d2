"""One kforge episode as SkyRL's generator drives it, the "model" a script of Hermes tool calls (write
the fused softmax candidate, compile, verify, submit). Usage: skyrl_episode.py [ENDPOINT] (default
tcp://127.0.0.1:5555); needs `pip install tools/python[skyrl]` and a running `kforge serve`."""
import json
import os
import sys

import skyrl_gym

import kforge_client.adapters.skyrl_env  # noqa: F401  registers "kforge"

endpoint = sys.argv[1] if len(sys.argv) > 1 else "tcp://127.0.0.1:5555"
here = os.path.dirname(os.path.abspath(__file__))
candidate = os.path.join(here, "..", "..", "..", "datasets", "samples", "candidates", "softmax_rows", "fused")
calls = [("write_file", {"path": n, "content": open(os.path.join(candidate, n)).read()}) for n in ("kernel.cu",
          "launch.yaml")] + [(tool, {}) for tool in ("compile", "verify", "submit")]

extras = {"task": "softmax_rows", "seed": 0, "max_turns": 8}  # a dataset row's fields
env = skyrl_gym.make("kforge", env_config={"endpoint": endpoint}, extras=extras)
chat, metadata = env.init([{"role": "system", "content": "You write fast CUDA kernels."}])
for name, arguments in calls:
    reply = "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"
    out = env.step(reply)
    chat += [{"role": "assistant", "content": reply}] + out["observations"]  # the policy's, then the env's
    text = out["observations"][0]["content"] if out["observations"] else out["metadata"]["observation"]
    print(f"turn {env.turns} {name}: {text.splitlines()[0]} | reward {out['reward']} done {out['done']}")
    if out["done"]:
        break
print("metrics", env.get_metrics(), "|", len(chat), "messages")
env.close()
