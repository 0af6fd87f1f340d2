"""kforge in verl: dataset rows, the tools through verl's own loader, one trajectory in verl's call order.
  KFORGE_ENDPOINT=tcp://127.0.0.1:5555 python tools/python/examples/verl_example.py   (from the repository root)
Training then points verl at the two files: data.train_files=kforge_train.parquet,
actor_rollout_ref.rollout.multi_turn.tool_config_path=tools/python/examples/verl_tool_config.yaml."""
import asyncio
import json
import os
import pandas as pd
from verl.experimental.agent_loop.tool_agent_loop import AgentData, ToolAgentLoop
from verl.experimental.agent_loop.tool_parser import FunctionCall
from verl.tools.tool_registry import initialize_tools_from_config
from kforge_client.adapters.verl_tool import compute_score, verl_rows

endpoint = os.environ.setdefault("KFORGE_ENDPOINT", "tcp://127.0.0.1:5555")
rows = verl_rows(endpoint, ["softmax_rows", "gelu_scale_residual"], seeds=(0, 1))
pd.DataFrame(rows).to_parquet(os.environ.get("KFORGE_DATASET", "kforge_train.parquet"))
loop = object.__new__(ToolAgentLoop)  # only its tool-calling part: generation needs a model
loop.tools = {t.name: t for t in initialize_tools_from_config("tools/python/examples/verl_tool_config.yaml")}
loop.max_tool_response_length, loop.tool_response_truncate_side = 20000, "middle"
row = rows[2]  # gelu_scale_residual, seed 0
data = AgentData(row["prompt"], None, None, None, None, {}, "trajectory-1", row["extra_info"]["tools_kwargs"])
src = "datasets/samples/candidates/gelu_scale_residual/fused/"
calls = [("write_file", {"path": f, "content": open(src + f).read()}) for f in ("kernel.cu", "launch.yaml")]

async def main():
    for name, args in calls + [("compile", {}), ("submit", {})]:
        reply, reward, _ = await loop._call_tool(FunctionCall(name=name, arguments=json.dumps(args)), data.tools_kwargs, data)
        print(name, "->", reply.text.splitlines()[0], "| reward", reward)
    print("score:", await compute_score(extra_info=dict(data.extra_fields)))

asyncio.run(main())
