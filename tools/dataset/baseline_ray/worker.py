"""The Ray actor that times on one GPU of a node (`StageProcess`; the driver applies `ray.remote`).

It reserves one GPU (Ray sets CUDA_VISIBLE_DEVICES to it, so the stage sees one device) or one unit of
a custom resource on a CPU-only cluster, and its share of the node's CPUs. For each chunk of task ids
the driver hands it, it runs the stage (tools/dataset/synth_gpu.py, `--exported` and `--ids`: no
kforge needed on the node) as a child process into a folder of its own on the node; `poll` hands back
the rows written since the last poll, complete lines only, as the stage wrote them. The child gets
SIGKILL when the actor's process dies (PR_SET_PDEATHSIG), so a lost actor or node leaves no stage
timing on its GPU; its compile workers are the stage's own (they end with it).

This module is shipped to the nodes by value (the driver registers it with cloudpickle): the nodes
need the checkout at the driver's path (for synth_gpu.py) and an interpreter with torch, not this
package on their PYTHONPATH."""
import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

# The environment the stage records (synth_gpu/torch_env.py's `environment`, the same function), from a
# child process: torch is never imported into the actor.
PROBE = r"""
import json, os, sys
sys.path.insert(0, sys.argv[1])
os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
import torch
from synth_gpu.torch_env import environment
dev = sys.argv[2]
if dev.startswith("cuda") and not torch.cuda.is_available():
    print(json.dumps({"error": "no CUDA device visible (CUDA_VISIBLE_DEVICES=%s)" % os.environ.get("CUDA_VISIBLE_DEVICES")}))
else:
    print(json.dumps(environment(torch, dev)))
"""


def _child_setup(cpus):
    def setup():
        # SIGKILL when the thread that started the child ends: the actor's keeper thread, which lives
        # until the child ends or the actor's process dies.
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)
        if cpus:
            os.sched_setaffinity(0, cpus)
    return setup


class StageProcess:
    def __init__(self, slot, root, python, dataset, device, workdir, group=None):
        """slot: the driver's number of this process; root: the checkout (same path on every node);
        python: the interpreter for the stage (None: this actor's); group: (index, count) of the node's
        CPU groups to pin the stage to, or None (no pinning)."""
        self.slot, self.root, self.dataset, self.device = slot, root, dataset, device
        self.python = python or sys.executable
        self.tool = os.path.join(root, "tools", "dataset", "synth_gpu.py")
        self.dir = os.path.join(workdir, f"slot-{slot}-{os.getpid()}")
        self.out = os.path.join(self.dir, "out")
        os.makedirs(self.out, exist_ok=True)
        self.part = os.path.join(self.out, "part-0.jsonl")
        self.log = os.path.join(self.dir, "stage.log")
        self.cpus = None
        if group:  # synth_gpu's split of a host's CPUs, from the checkout (this module travels by value)
            if os.path.join(root, "tools", "dataset") not in sys.path:
                sys.path.append(os.path.join(root, "tools", "dataset"))
            from synth_gpu.placement import cpu_group
            self.cpus = cpu_group(*group)
        self.proc = None
        self.offset = 0
        self.chunk_no = -1
        self.start_error = None

    def info(self):
        """Where this process runs and what it measures with: node, pid, GPU, the stage's environment."""
        import ray
        base = {"slot": self.slot, "node_id": ray.get_runtime_context().get_node_id(), "host": socket.gethostname(),
                "ip": ray.util.get_node_ip_address(), "pid": os.getpid(), "gpu_ids": [str(g) for g in ray.get_gpu_ids()],
                "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"), "cpus": self.cpus, "dir": self.dir}
        if not os.path.exists(self.tool):
            return dict(base, error=f"{self.tool}: no such file on {base['host']} (the checkout must be at the "
                                    "driver's path on every node)")
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        try:
            r = subprocess.run([self.python, "-c", PROBE, os.path.join(self.root, "tools", "dataset"), self.device],
                               capture_output=True, text=True, timeout=600, env=env, preexec_fn=_child_setup(self.cpus))
            lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
            got = json.loads(lines[-1]) if lines else {"error": (r.stderr.strip().splitlines() or ["no output"])[-1]}
        except (OSError, subprocess.SubprocessError, ValueError) as e:
            got = {"error": f"{type(e).__name__}: {e}"}
        if "error" in got:
            return dict(base, error=f"{base['host']}: the environment probe failed: {got['error']}")
        return dict(base, env=got)

    def start(self, chunk_no, settings, tasks, stage_args, budget_s=None):
        """Runs the stage on these tasks (export-gpu's lines) in the background; False if one still runs."""
        if self.proc is not None and self.proc.poll() is None:
            return False
        self.chunk_no = chunk_no
        exported = os.path.join(self.dir, f"exported-{chunk_no}.jsonl")
        ids = os.path.join(self.dir, f"ids-{chunk_no}.txt")
        with open(exported, "w") as f:
            f.write(json.dumps(dict(settings, shards=1)) + "\n")
            f.writelines(json.dumps(t) + "\n" for t in tasks)
        with open(ids, "w") as f:
            f.writelines(t["id"] + "\n" for t in tasks)
        argv = [self.python, self.tool, self.dataset, "--exported", exported, "--ids", ids, "--shard", "0/1",
                "--out", self.out, "--device", self.device, *stage_args]
        if budget_s is not None:
            argv += ["--time-budget-s", f"{max(1.0, budget_s):.0f}"]
        started = threading.Event()
        self.proc, self.start_error = None, None

        def keep():
            try:
                with open(self.log, "a") as log:
                    log.write(f"== chunk {chunk_no}: {len(tasks)} task(s), {time.strftime('%H:%M:%S')}: {' '.join(argv)}\n")
                    log.flush()
                    self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                                 env=dict(os.environ, PYTHONUNBUFFERED="1"),
                                                 preexec_fn=_child_setup(self.cpus))
            except BaseException as e:  # noqa: BLE001 - handed to start()
                self.start_error = f"{type(e).__name__}: {e}"
            started.set()
            if self.proc is not None:
                self.proc.wait()

        threading.Thread(target=keep, name=f"stage-{self.slot}", daemon=True).start()
        started.wait(60)
        if self.proc is None:
            raise RuntimeError(f"slot {self.slot}: could not start the stage: {self.start_error}")
        return True

    def poll(self):
        """The complete rows written since the last poll (as the stage wrote them), whether the stage
        still runs, its exit status, its pid and its last progress line."""
        lines = []
        if os.path.exists(self.part):
            with open(self.part, "rb") as f:
                f.seek(self.offset)
                data = f.read()
            end = data.rfind(b"\n") + 1
            if end:
                lines = data[:end].decode().splitlines()
                self.offset += end
        running = self.proc is not None and self.proc.poll() is None
        rc = None if self.proc is None or running else self.proc.returncode
        return {"lines": lines, "running": running, "rc": rc, "chunk": self.chunk_no,
                "stage_pid": self.proc.pid if self.proc is not None else None, "last": self.tail(1)}

    def tail(self, n=8):
        try:
            with open(self.log, "rb") as f:
                f.seek(max(0, os.path.getsize(self.log) - 16384))
                text = f.read().decode(errors="replace")
        except OSError:
            return ""
        return "\n".join([ln for ln in text.splitlines() if ln.strip()][-n:])

    def stop(self, timeout=30.0):
        """SIGTERM to the stage (its rows so far are written), SIGKILL after `timeout`."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        return self.poll()
