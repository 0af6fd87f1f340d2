"""What the Python client's suites (test_client.py, test_client_evaluate.py) share: `kforge serve` as
a subprocess with a config written for the test, the sample candidate, action builders, a dead
endpoint. Their `server` fixture is in conftest.py."""
import json
import http.server
import os
import re
import signal
import subprocess
import sys

SOURCE_DIR = os.environ.get("KFORGE_SOURCE_DIR", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
sys.path.insert(0, os.path.join(SOURCE_DIR, "tools", "python"))
KFORGE = os.path.abspath(os.environ.get("KFORGE_BIN", os.path.join(SOURCE_DIR, "build", "tools", "kforge")))

CAND = os.path.join(SOURCE_DIR, "datasets", "samples", "candidates", "gelu_scale_residual", "fused")


def client_env(**extra):
    """os.environ with tools/python (kforge_client) first on PYTHONPATH, plus `extra`: the environment
    of a subprocess that imports the client."""
    path = os.pathsep.join(filter(None, [os.path.join(SOURCE_DIR, "tools", "python"), os.environ.get("PYTHONPATH")]))
    return dict(os.environ, PYTHONPATH=path, **extra)


def candidate(name):
    with open(os.path.join(CAND, name)) as f:
        return f.read()


def write(path, content):
    return {"name": "write_file", "arguments": {"path": path, "content": content}}


def call(name, **args):
    return {"name": name, "arguments": args}


def reward_config_rescaling(tmp_path):
    """configs/reward.yaml with compile_baseline.other_gpu: rescale, written to tmp_path: a server
    config's `reward_config` for tasks whose synthetic baselines name the sample's H200, so that tier 3
    stays reachable when the judge runs on another GPU model (the evidence states the rescale)."""
    with open(os.path.join(SOURCE_DIR, "configs", "reward.yaml")) as f:
        text = f.read()
    text, n = re.subn(r"^  other_gpu: refuse\b", "  other_gpu: rescale", text, flags=re.M)
    assert n == 1, "configs/reward.yaml no longer sets compile_baseline.other_gpu: refuse"
    path = tmp_path / "reward.yaml"
    path.write_text(text)
    return str(path)


class Server:
    """`kforge serve` as a subprocess with a config written for the test."""

    def __init__(self, tmp_path, endpoint=None, record=True, stream=None, **sections):
        self.tmp_path = tmp_path
        self.endpoint = endpoint or f"ipc://{tmp_path}/kforge.sock"
        self.record = str(tmp_path / "trajectories.h5") if record else None
        config = {"scheduler": {"gpus": 0, "compile_workers": 1}}
        for k, v in sections.items():
            if isinstance(v, dict):
                config.setdefault(k, {}).update(v)
            else:
                config[k] = v
        if self.record:
            config["record"] = {"path": self.record, "fsync": False}
        if stream:
            config["stream"] = {"bind": stream}
        self.config = tmp_path / "server.yaml"
        self.config.write_text(json.dumps(config))  # JSON is YAML
        self.proc = None
        self.start()

    def start(self):
        self.log = open(self.tmp_path / "serve.log", "a")
        self.proc = subprocess.Popen([KFORGE, "serve", "--config", str(self.config), "--bind", self.endpoint],
                                     stdout=subprocess.PIPE, stderr=self.log, text=True)
        line = self.proc.stdout.readline()
        assert line.startswith("kforge serve: listening on"), line + open(self.tmp_path / "serve.log").read()
        self.line = line

    def kill(self):
        self.proc.kill()
        self.proc.wait()

    def terminate(self, timeout=30):
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.terminate()


def dead_endpoint():
    """A loopback tcp endpoint nothing listens on."""
    import socket
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"tcp://127.0.0.1:{sock.getsockname()[1]}"


class StandInChat(http.server.BaseHTTPRequestHandler):
    """A stand-in OpenAI-compatible /v1/chat/completions endpoint: each request is answered with
    answer(body)'s assistant message, as a whole chat.completion (id, object, created, model, usage:
    clients that validate it, verifiers', need them all). Subclasses write answer()."""
    count = 0

    def answer(self, body):
        raise NotImplementedError

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        message = self.answer(body)
        StandInChat.count += 1
        data = json.dumps({"id": f"chat-{StandInChat.count}", "object": "chat.completion", "created": 0,
                           "model": body.get("model", "stand-in"),
                           "choices": [{"index": 0, "message": message,
                                        "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}],
                           "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}).encode()
        self.send_response(200 if self.path.endswith("/chat/completions") else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass
