"""Thin adapters from trainers and evaluators to the kforge server."""
from .verl_tool import KforgeVerlTool
from .openai_eval import ChatEvaluator, EpisodeResult

__all__ = ["KforgeVerlTool", "ChatEvaluator", "EpisodeResult"]
