"""Python client of the kforge rollout server (rollout/PROTOCOL.md).

- ``Client``: synchronous requests over one DEALER socket, busy retries and reconnects with backoff;
- ``KernelEnv``: a Gymnasium-style environment, ``reset(seed=None, options=None)`` / ``step(action)``;
- ``AsyncClient``: asyncio, many concurrent episodes over one socket;
- ``TrajectoryReader`` / ``read_trajectories``: recorded trajectories (rollout/TRAJECTORY_FORMAT.md);
- ``adapters``: a verl tool, a verifiers environment (each needs its trainer's package) and an
  evaluation loop over an OpenAI-compatible chat endpoint;
- ``kforge-evaluate`` (or ``python -m kforge_client.evaluate``): a split's tasks played by a chat
  endpoint, many episodes at once, into a resumable JSONL file with a summary.

Every call's ``timeout`` is a wall-clock bound; ``busy`` replies are retried for ``busy_timeout``
seconds at most.
"""
# The package's version: pyproject.toml reads it from here (tool.setuptools.dynamic).
__version__ = "0.1.0"

from .errors import KforgeError, ServerUnavailable
from .client import Client
from .env import KernelEnv, best_version
from .async_client import AsyncClient, AsyncEpisode
from .trajectories import TrajectoryReader, read_trajectories

PROTOCOL_VERSION = 1

__all__ = ["Client", "KernelEnv", "best_version", "AsyncClient", "AsyncEpisode", "KforgeError", "ServerUnavailable",
           "TrajectoryReader", "read_trajectories", "PROTOCOL_VERSION", "__version__"]
