"""Stored candidates played as a policy: ``kforge-evaluate --replay DIR`` (no chat endpoint).

``DIR/TASK/`` holds one candidate for task TASK, as its files: ``kernel.cu`` and ``launch.yaml``
for the kernel kind (env/launch/KERNEL_FORMAT.md), or an extension's files (a CUDA Agent workdir's
``kernels/*.cu``, ``*_binding.cpp`` and ``model_new.py``, or a ``load_inline`` ``model_new.py``).
Each episode writes every file of its task's folder with ``write_file`` and submits, in one turn;
a task without a folder submits the empty workspace, so it counts as a failure in every metric,
as a benchmark counts a problem its model did not solve. The episodes, their lines and the report
are the chat loop's (ChatEvaluator.run_episode): only where the tool calls come from differs.
This is how a set of candidates written elsewhere (a checkpoint's, a public run's, the project's
own for a benchmark) is judged and reported the way a model is.
"""
import json
import os

from .openai_eval import ChatEvaluator, EpisodeResult

# What a folder may hold that is no file of the candidate.
NOT_CANDIDATE = frozenset({"expect.yaml", "README.md"})
MAX_FILE_BYTES = 1 << 20  # as the workspace takes (kforge eval: kernel.cu and launch.yaml at most 1 MiB)


def candidate_files(folder) -> dict[str, str]:
    """{relative path: text} of the candidate in `folder` (regular files, in name order; links and
    files over 1 MiB are refused: ValueError naming them). {} when there is no such folder."""
    if not os.path.isdir(folder):
        return {}
    files = {}
    for root, dirs, names in os.walk(folder, followlinks=False):
        dirs.sort()
        for name in sorted(names):
            path = os.path.join(root, name)
            rel = os.path.relpath(path, folder)
            if rel in NOT_CANDIDATE or name.startswith("."):
                continue
            if os.path.islink(path) or not os.path.isfile(path):
                raise ValueError(f"{path}: not a regular file (a stored candidate holds files only)")
            if os.path.getsize(path) > MAX_FILE_BYTES:
                raise ValueError(f"{path}: over {MAX_FILE_BYTES} bytes")
            with open(path, encoding="utf-8") as f:
                files[rel] = f.read()
    return files


class ReplayEvaluator(ChatEvaluator):
    """ChatEvaluator whose 'model' answers the first turn with the stored candidate's writes and a
    submit, and any later turn with a submit."""

    def __init__(self, folder, client) -> None:  # noqa: D107 - no endpoint: the chat's fields stay unset
        if not os.path.isdir(folder):
            raise ValueError(f"--replay {folder}: not a folder")
        self.folder = folder
        self.client = client
        self.task = None

    def run_episode(self, task, seed=None, options=None, system_prompt=None) -> EpisodeResult:
        self.task = task
        return super().run_episode(task, seed=seed, options=options, system_prompt=system_prompt)

    def _chat(self, messages, tools):
        calls = []
        if not any(m.get("role") == "assistant" for m in messages):
            for rel, text in candidate_files(os.path.join(self.folder, self.task)).items():
                calls.append(("write_file", {"path": rel, "content": text}))
        calls.append(("submit", {}))
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": f"replay_{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            for i, (name, args) in enumerate(calls)]}
