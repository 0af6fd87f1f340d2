"""Issue 26 against the real `kforge serve`: no acknowledged trajectory is lost (a CI-sized kill -9
campaign, tools/bench/kill_campaign.py), a failed append answers `record_failed` and the trajectory
is written once it can be, `--record` records without a config key, and one client identity holds
at most `sessions.max_episodes_per_client` episodes."""
import json
import os
import resource
import subprocess
import sys
import time

import msgpack
import pytest
import zmq

from client_harness import KFORGE, SOURCE_DIR, Server, call
from kforge_client import Client, KforgeError, read_trajectories

sys.path.insert(0, os.path.join(SOURCE_DIR, "tools", "bench"))
import kill_campaign  # noqa: E402


def test_ten_kill_9s_under_16_writers_lose_no_acknowledged_trajectory(tmp_path):
    f = kill_campaign.campaign(KFORGE, kills=10, writers=16, seed=7, work=str(tmp_path), fsync=False, progress=None)
    assert f["acknowledged_episodes"] > 50, f
    assert f["acknowledged_missing_after_restart"] == 0, f
    assert f["acknowledged_unreadable_after_restart"] == 0, f
    assert f["acknowledged_unreadable_final"] == 0, f
    assert f["recorded_trajectories"] >= f["acknowledged_episodes"], f


def wait_for(predicate, seconds=10.0):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


def test_a_failed_append_answers_record_failed_and_is_written_once_it_can_be(tmp_path):
    s = Server(tmp_path)
    try:
        c = Client(s.endpoint)
        closed = c.reset("softmax_rows")["episode"]
        ended = c.reset("softmax_rows", options={"max_turns": 1})["episode"]
        # A file size limit on the server just above its journal: the next trajectory cannot be committed.
        journal = s.record + ".journal"
        _, hard = resource.prlimit(s.proc.pid, resource.RLIMIT_FSIZE)
        resource.prlimit(s.proc.pid, resource.RLIMIT_FSIZE, (os.path.getsize(journal) + 64, hard))
        with pytest.raises(KforgeError) as e:
            c.close_episode(closed)
        assert e.value.kind == "record_failed" and closed in str(e.value) and "retries" in str(e.value)
        with pytest.raises(KforgeError) as e:
            c.step(ended, call("list_files"))  # the step that ends it (max_turns 1)
        assert e.value.kind == "record_failed" and "truncated true" in str(e.value)
        record = c.health()["record"]
        assert record["unwritten"] == 2 and record["failed"] >= 2, record
        resource.prlimit(s.proc.pid, resource.RLIMIT_FSIZE, (hard, hard))
        assert wait_for(lambda: c.health()["record"]["unwritten"] == 0), c.health()["record"]
        assert c.close_episode(ended)["closed"]  # on disk now: the close is ok
        assert sorted(t["episode"] for t in read_trajectories(s.record)) == sorted([closed, ended])
    finally:
        s.stop()


def test_serve_record_flag_records_every_trajectory_without_a_config_key(tmp_path):
    config = tmp_path / "server.yaml"
    config.write_text(json.dumps({"scheduler": {"gpus": 0, "compile_workers": 1}}))
    endpoint, out = f"ipc://{tmp_path}/k.sock", tmp_path / "run.h5"
    for args, recorded in (([], False), (["--record", str(out)], True)):
        with open(tmp_path / "serve.log", "a") as log:
            proc = subprocess.Popen([KFORGE, "serve", "--config", str(config), "--bind", endpoint] + args,
                                    stdout=subprocess.PIPE, stderr=log, text=True)
        try:
            line = proc.stdout.readline()
            assert ("recorded to " + str(out)) in line if recorded else "trajectories not recorded" in line, line
            c = Client(endpoint)
            c.close_episode(c.reset("softmax_rows")["episode"])
            assert (c.health()["record"] is not None) == recorded
        finally:
            proc.terminate()
            proc.wait(30)
    assert len(read_trajectories(str(out))) == 1
    with open(os.path.join(SOURCE_DIR, "configs", "server.yaml")) as f:
        assert "--record" in f.read()  # the shipped config says how to record


def raw_reset(sock, rid, task="softmax_rows"):
    sock.send_multipart([rid, b"reset", msgpack.packb({"task": task})])
    _, status, payload = sock.recv_multipart()
    return status.decode(), msgpack.unpackb(payload)


def test_one_client_identity_holds_at_most_its_cap_and_busy_names_both(tmp_path):
    s = Server(tmp_path, sessions={"max_episodes_per_client": 2})
    ctx = zmq.Context.instance()
    a, b = ctx.socket(zmq.DEALER), ctx.socket(zmq.DEALER)
    try:
        for sock, name in ((a, b"trainer-a"), (b, b"trainer-b")):
            sock.setsockopt(zmq.ROUTING_ID, name)
            sock.setsockopt(zmq.RCVTIMEO, 10000)
            sock.setsockopt(zmq.LINGER, 0)
            sock.connect(s.endpoint)
        held = [raw_reset(a, b"1"), raw_reset(a, b"2")]
        assert [st for st, _ in held] == ["ok", "ok"]
        status, err = raw_reset(a, b"3")
        assert status == "error" and err["kind"] == "busy" and err["retry_after"] > 0, err
        assert "'trainer-a'" in err["message"] and "max_episodes_per_client = 2" in err["message"], err
        assert raw_reset(b, b"1")[0] == "ok"  # another client is not held back
        Client(s.endpoint).close_episode(held[0][1]["episode"])  # closing frees a slot of trainer-a's
        assert raw_reset(a, b"4")[0] == "ok"
    finally:
        a.close()
        b.close()
        s.stop()
