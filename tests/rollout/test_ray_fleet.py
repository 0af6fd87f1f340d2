"""kforge_client.ray on a three-node Ray cluster simulated on this machine (ray.cluster_utils.Cluster,
CPU only: each node one CPU and the custom resource `kforge_judge`), with the real `kforge serve`:
one server per node in a placement group pinned to it; the router fills servers by free capacity;
a node removed mid-episode ends its episodes with `end_cause: server_lost`, keeping every answered
turn, and new episodes go to the others; the merged recording holds every server's episodes.

The tests share one cluster, fleet and recording (a Ray node costs seconds to start on two cores)
and run in file order: the node removal comes after the routing test, the recording's check last."""
import asyncio
import os
import time

import pytest

from client_harness import KFORGE, call, client_env, write
from shared_checks import pid_alive

ray = pytest.importorskip("ray", reason="ray is not installed (tools/setup.sh's trainers step installs it)")
from ray.cluster_utils import Cluster  # noqa: E402

from kforge_client import Client, KforgeError, TrajectoryReader, read_trajectories  # noqa: E402
from kforge_client.ray import (END_CAUSE_SERVER_LOST, MergedRecording, Router, ServerFleet, ServerLost,  # noqa: E402
                               ServerShape)

MAX_EPISODES = 8  # per server: small, so that the routing test can fill every server
JUDGE = {"kforge_judge": 1}


@pytest.fixture(scope="module")
def cluster():
    os.environ["PYTHONPATH"] = client_env()["PYTHONPATH"]  # the nodes' workers import kforge_client
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "resources": JUDGE, "include_dashboard": False})
    workers = [c.add_node(num_cpus=1, resources=JUDGE) for _ in range(2)]
    ray.init(address=c.address, log_to_driver=False)
    c.wait_for_nodes()
    yield c, workers
    ray.shutdown()
    c.shutdown()


@pytest.fixture(scope="module")
def fleet(cluster, tmp_path_factory):
    work = tmp_path_factory.mktemp("fleet")
    f = ServerFleet.start(KFORGE, overrides={"sessions": {"max_episodes": MAX_EPISODES},
                                             "record": {"fsync": False}},
                          shape=ServerShape(gpus=0, cpus=1, resources=JUDGE), workdir=str(work))
    recording = MergedRecording(str(work / "merged.h5"), {s.name: s.stream for s in f.servers})
    yield f, recording
    f.shutdown(timeout=30)



def run(coro):
    return asyncio.run(coro)


def test_one_server_per_node_each_reserving_its_node(cluster, fleet):
    f, _ = fleet
    alive = [n for n in ray.nodes() if n["Alive"]]
    assert len(f.servers) == 3
    assert sorted(s.node_id for s in f.servers) == sorted(n["NodeID"] for n in alive)
    for s in f.servers:
        assert s.bundle == {"CPU": 1.0, "kforge_judge": 1} and s.endpoint.startswith("tcp://")
        with Client(s.endpoint, timeout=10) as c:
            assert c.health()["episodes"]["max"] == MAX_EPISODES
    # Every judging resource is held by a server's placement group.
    assert ray.available_resources().get("kforge_judge", 0) == 0


def test_router_spreads_episodes_by_free_capacity_until_every_server_is_full(fleet):
    f, recording = fleet
    first = f.servers[0]
    # Four of the first server's slots are taken by a client outside the router.
    outside = Client(first.endpoint, timeout=10)
    held = [outside.reset("softmax_rows", seed=i)["episode"] for i in range(4)]

    async def main():
        async with Router(f.servers, recording=recording, health_interval=0.2, busy_timeout=0.5) as r:
            await asyncio.sleep(0.5)  # a health round that sees the four
            episodes = []
            for i in range(2 * MAX_EPISODES + 4):
                ep = await r.reset("softmax_rows", seed=100 + i)
                obs, *_ = await ep.step(write("notes.md", f"episode {i}"))
                assert obs.startswith("wrote notes.md")
                episodes.append(ep)
            counts = {s.name: sum(ep.server.name == s.name for ep in episodes) for s in f.servers}
            with pytest.raises(KforgeError) as full:
                await r.reset("softmax_rows")
            await asyncio.gather(*[ep.close() for ep in episodes])
            return counts, full.value.kind

    counts, kind = run(main())
    # Placement follows free slots: 4 left on the first server, 8 on each other; 20 episodes fill them all.
    assert counts == {f.servers[0].name: 4, f.servers[1].name: MAX_EPISODES, f.servers[2].name: MAX_EPISODES}
    assert kind == "busy"
    for ep in held:
        outside.close_episode(ep)
    outside.close()


def test_a_node_removed_mid_episode_ends_its_episodes_as_server_lost_and_new_ones_go_elsewhere(cluster, fleet):
    c, workers = cluster
    f, recording = fleet
    victim = next(s for s in f.servers if s.node_id in {w.node_id for w in workers})

    async def main():
        async with Router(f.servers, recording=recording, health_interval=0.2, health_timeout=0.5,
                          max_health_failures=2) as r:
            episodes = [await r.reset("softmax_rows", seed=200 + i) for i in range(6)]
            on_victim = [ep for ep in episodes if ep.server.name == victim.name]
            assert len(on_victim) == 2, r.status()
            answered = {}
            for ep in on_victim:
                answered[ep.id] = [(await ep.step(write("kernel.cu", "// v1")))[0],
                                   (await ep.step(call("read_file", path="kernel.cu")))[0]]
            assert answered[on_victim[0].id][1] == "// v1"
            c.remove_node(next(w for w in workers if w.node_id == victim.node_id), allow_graceful=False)
            # The node's processes go: its raylet at once, the actor when it sees its raylet gone, and
            # `kforge serve` with the actor.
            t0 = time.monotonic()
            while pid_alive(victim.pid):
                assert time.monotonic() - t0 < 30, "kforge serve outlived its node"
                await asyncio.sleep(0.1)
            # A step sent to the dead node ends as server_lost once the router notices, not at its timeout.
            with pytest.raises(ServerLost) as lost:
                await asyncio.wait_for(on_victim[0].step(call("list_files")), 20)
            assert lost.value.kind == END_CAUSE_SERVER_LOST and on_victim[0].end_cause == END_CAUSE_SERVER_LOST
            with pytest.raises(ServerLost):
                await on_victim[1].step(call("list_files"))  # the other one ended with it
            status = r.status()
            after = [await r.reset("softmax_rows", seed=300 + i) for i in range(4)]
            for ep in after + [ep for ep in episodes if ep not in on_victim]:
                obs, *_ = await ep.step(call("list_files"))  # the other servers serve on
                await ep.close()
            return answered, lost.value.trajectory, status, [ep.server.name for ep in after]

    answered, copy, status, placed_after = run(main())
    assert status[victim.name]["lost"] and not status[victim.name]["routable"]
    assert victim.name not in placed_after and len(set(placed_after)) == 2
    # The copy holds every answered turn, and only those.
    assert [t["observation"] for t in copy["turns"]] == answered[copy["episode"]]
    assert copy["end_cause"] == END_CAUSE_SERVER_LOST and copy["reset"]["observation"]
    # Both episodes of the lost node are in the merged recording, as the router kept them.
    recording.close(wait_s=10)
    by_episode = {t["episode"]: t for t in read_trajectories(recording.path)}
    for episode, observations in answered.items():
        t = by_episode[episode]
        assert t["end_cause"] == END_CAUSE_SERVER_LOST and t["server"] == victim.name and t["recorded_by"] == "client"
        assert [turn["observation"] for turn in t["turns"]] == observations
        assert [turn["action"]["name"] for turn in t["turns"]] == ["write_file", "read_file"]


def test_the_merged_recording_holds_every_servers_episodes(fleet):
    f, recording = fleet  # closed by the test before: every stream drained into it
    with TrajectoryReader(recording.path) as r:
        index = r.index
        servers = {s.decode() for s in index["server"]}
        assert servers == {s.name for s in f.servers}
        trajectories = list(r)
    # 24 episodes of the routing test (20 routed, 4 held outside), 10 of the node test.
    assert len(trajectories) == 34 and len({t["episode"] for t in trajectories}) == 34
    assert sum(t["end_cause"] == END_CAUSE_SERVER_LOST for t in trajectories) == 2
    assert all(t["recorded_by"] == "server" for t in trajectories if t["end_cause"] != END_CAUSE_SERVER_LOST)
    # What each server still running recorded in its own file is what the merged file holds from it.
    lost = {t["server"] for t in trajectories if t["end_cause"] == END_CAUSE_SERVER_LOST}
    for s in f.servers:
        mine = {t["episode"] for t in trajectories if t["server"] == s.name and t["recorded_by"] == "server"}
        assert mine, s.name
        if s.name not in lost:
            assert mine == {t["episode"] for t in read_trajectories(s.record)}
