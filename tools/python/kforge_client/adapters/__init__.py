"""Adapters from trainers and evaluators to the kforge server.

``openai_eval`` (``ChatEvaluator``) needs nothing beyond the client; ``verl_tool`` (``KforgeTool``,
verl's ``BaseTool``) and ``verifiers_env`` (``KforgeEnv``, a verifiers ``MultiTurnEnv``) import
their trainer's package and are loaded only when named (``pip install 'kforge-client[verl]'`` /
``[verifiers]``).
"""
from .openai_eval import ChatEndpointError, ChatEvaluator, EpisodeResult, StepError

_LAZY = {"KforgeTool": "verl_tool", "KforgeEnv": "verifiers_env"}


def __getattr__(name) -> type:
    if name in _LAZY:
        import importlib
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["ChatEvaluator", "ChatEndpointError", "EpisodeResult", "StepError", "KforgeTool", "KforgeEnv"]
