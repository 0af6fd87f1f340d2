"""kforge on a Ray cluster (tools/python/docs/ray.md): one `kforge serve` per judging node, started as
a Ray actor in a placement group that reserves the node's GPUs and CPUs (``ServerFleet``,
``ServerShape``); a router that spreads new episodes by free capacity and health and ends a lost
server's episodes with ``end_cause: server_lost`` (``Router``, ``RoutedEpisode``, ``ServerLost``);
every server's trajectory stream merged into one file with a `server` column (``MergedRecording``).
Needs the ``ray`` extra (``pip install 'tools/python[ray]'``)."""
from .servers import ServerFleet, ServerInfo, ServerProcess, ServerShape, judging_nodes, server_config
from .router import END_CAUSE_SERVER_LOST, RoutedEpisode, Router, ServerLost
from .recording import MergedFileWriter, MergedRecording

__all__ = ["ServerFleet", "ServerInfo", "ServerProcess", "ServerShape", "judging_nodes", "server_config",
           "Router", "RoutedEpisode", "ServerLost", "END_CAUSE_SERVER_LOST", "MergedRecording", "MergedFileWriter"]
