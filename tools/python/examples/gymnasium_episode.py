"""One kforge episode through Gymnasium with a scripted policy: write the shipped fused softmax
candidate, compile, verify, submit. Usage: gymnasium_episode.py [ENDPOINT] (default tcp://127.0.0.1:5555);
needs `pip install tools/python[gymnasium]` and a running `kforge serve`."""
import os
import sys

import gymnasium

import kforge_client.adapters.gymnasium_env  # noqa: F401  registers kforge/Kernel-v0

endpoint = sys.argv[1] if len(sys.argv) > 1 else "tcp://127.0.0.1:5555"
here = os.path.dirname(os.path.abspath(__file__))
candidate = os.path.join(here, "..", "..", "..", "datasets", "samples", "candidates", "softmax_rows", "fused")
policy = [{"name": "write_file", "arguments": {"path": name, "content": open(os.path.join(candidate, name)).read()}}
          for name in ("kernel.cu", "launch.yaml")]
policy += ['<tool_call>{"name": "%s", "arguments": {}}</tool_call>' % tool for tool in ("compile", "verify", "submit")]

env = gymnasium.make("kforge/Kernel-v0", endpoint=endpoint, task="softmax_rows")
observation, info = env.reset(seed=0)
print(f"episode {env.unwrapped.episode}, seed {info['seed']}, prompt of {len(observation)} characters")
for action in policy:
    observation, reward, terminated, truncated, info = env.step(action)
    print(f"turn {info['turn']} {info['tool']}: {observation.splitlines()[0]} | reward {reward}")
    if terminated or truncated:
        print("episode reward", info["episode_reward"], "rule", info["reward"]["rule"])
        break
env.close()
