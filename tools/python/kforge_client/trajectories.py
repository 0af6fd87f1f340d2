"""Reading trajectories a server or ``kforge record`` wrote (rollout/TRAJECTORY_FORMAT.md)."""
from collections.abc import Iterator
from typing import Any, Self

import h5py
import msgpack


class TrajectoryReader:
    """``len(r)``, ``r.index`` (a numpy structured array: episode, task, seed, gpu, turns, episode_reward,
    termination_reason, end_cause, started_unix, duration_s, offset, length), ``r[i]`` (the whole
    trajectory as a dict) and iteration. The file may be read while a server appends to it (the
    writer holds no lock); a reader sees the trajectories committed when it opened the file.
    """

    def __init__(self, path) -> None:
        self.path = path
        self._f = h5py.File(path, "r", locking=False)
        if self._f.attrs.get("format") != "kforge-trajectories":
            self._f.close()
            raise ValueError(f"{path}: not a kforge trajectory file")
        self.index = self._f["trajectories/index"][:]
        self._data = self._f["trajectories/data"]

    def __len__(self) -> int:
        return len(self.index)

    def __getitem__(self, i) -> dict[str, Any]:
        row = self.index[i]
        start = int(row["offset"])
        raw = self._data[start:start + int(row["length"])].tobytes()
        return msgpack.unpackb(raw, raw=False)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for i in range(len(self)):
            yield self[i]

    def close(self) -> None:
        self._f.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def read_trajectories(path) -> list[dict[str, Any]]:
    """Every trajectory in the file, in recording order."""
    with TrajectoryReader(path) as r:
        return list(r)
