"""A verl-style tool: ``create`` / ``execute`` / ``calc_reward`` / ``release`` keyed by instance id.

verl (``verl.tools.base_tool.BaseTool``) calls one tool object per function name, with an
instance id per rollout trajectory. Here every kforge tool of one rollout shares one episode:

    tool = KforgeVerlTool(AsyncClient(endpoint))            # or .for_function("compile")
    iid, prompt = await tool.create(task="softmax_rows", seed=7)
    text, reward, metrics = await tool.execute(iid, {"path": "kernel.cu", "content": src}, name="write_file")
    final = await tool.calc_reward(iid); await tool.release(iid)

To subclass verl's BaseTool, forward its methods to these (the signatures match verl's, except
that ``execute`` also takes the function name when one object serves every function).
"""
import uuid


class KforgeVerlTool:
    def __init__(self, client, default_task=None, function=None, episodes=None):
        self.client = client
        self.default_task = default_task
        self.function = function
        self._episodes = {} if episodes is None else episodes  # instance id -> {"episode", "reward", "done"}

    def for_function(self, name):
        """A view serving one function (verl's one-tool-per-schema layout); episodes are shared."""
        return KforgeVerlTool(self.client, self.default_task, name, self._episodes)

    async def get_openai_tool_schemas(self):
        tools = await self.client.tools()
        return [t for t in tools if self.function is None or t["function"]["name"] == self.function]

    async def create(self, instance_id=None, task=None, seed=None, options=None, **kwargs):
        instance_id = instance_id or str(uuid.uuid4())
        ep = await self.client.reset(task or self.default_task, seed=seed, options=options)
        self._episodes[instance_id] = {"episode": ep, "reward": 0.0, "done": False}
        return instance_id, ep.observation

    async def execute(self, instance_id, parameters, name=None, **kwargs):
        name = name or self.function
        if name is None:
            raise ValueError("which function? pass name= or use for_function(name)")
        state = self._episodes[instance_id]
        obs, reward, terminated, truncated, info = await state["episode"].step({"name": name, "arguments": parameters})
        state["reward"] += reward
        state["done"] = terminated or truncated
        metrics = {"terminated": terminated, "truncated": truncated, "turn": info.get("turn"),
                   "verdict": info.get("verdict"), "termination_reason": info.get("termination_reason")}
        return obs, reward, metrics

    async def calc_reward(self, instance_id, **kwargs):
        return self._episodes[instance_id]["reward"]

    async def release(self, instance_id, **kwargs):
        state = self._episodes.pop(instance_id, None)
        if state is not None:
            await state["episode"].close()
