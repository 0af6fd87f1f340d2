"""kforge as a verifiers environment: load it by name, play it with a model behind an OpenAI-compatible
endpoint (vLLM, SGLang, an API), many rollouts at once, and read each rollout's reward and evidence.
  KFORGE_ENDPOINT=tcp://127.0.0.1:5555 CHAT_URL=http://127.0.0.1:8000/v1 MODEL=NAME \
      python tools/python/examples/verifiers_example.py"""
import os
import verifiers as vf
from verifiers.types import ClientConfig

env = vf.load_environment("kforge_client.adapters.verifiers_env",
                          endpoint=os.environ.get("KFORGE_ENDPOINT", "tcp://127.0.0.1:5555"),
                          tasks=["softmax_rows", "gelu_scale_residual"], seeds=[0, 1], max_turns=8)
os.environ.setdefault("OPENAI_API_KEY", "none")  # a local server needs no key
client = ClientConfig(api_base_url=os.environ.get("CHAT_URL", "http://127.0.0.1:8000/v1"), api_key_var="OPENAI_API_KEY")
results = env.evaluate_sync(client, os.environ.get("MODEL", "my-checkpoint"), num_examples=-1, rollouts_per_example=2,
                            max_concurrent=8, state_columns=["kforge"])
for out in results["outputs"]:
    k = out["kforge"]
    print(k["task"], k["seed"], "reward", out["reward"], k["termination_reason"], "turns", k["turn"],
          "rule", (k["reward"] or {}).get("rule"))
print(len(results["outputs"]), "rollouts, mean reward", sum(o["reward"] for o in results["outputs"]) / len(results["outputs"]))
