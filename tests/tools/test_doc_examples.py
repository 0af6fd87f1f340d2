"""Every code example of the docs, executed against a real `kforge serve` (no GPU, no mock).

Docs covered: DOCS below. Every fenced code block in them is one of:
- run: ```python blocks (from the repository root, with tools/python on PYTHONPATH) and ```sh or
  ```bash blocks (bash -euo pipefail, in an empty temporary directory, with a `kforge-evaluate` on
  PATH that runs `python -m kforge_client.evaluate`);
- the server: the block after `<!-- doc-test: server -->` is the `kforge serve` command the other
  examples talk to; this test runs that very command (with `--bind` on a free port added and no GPU
  visible) once for the module;
- skipped: the block after `<!-- doc-test: skip: REASON -->`, and the reason must be given.
A block that is none of these fails the test. Markers are HTML comments on the lines right before
a block (blank lines between are allowed); `<!-- doc-test: expect: TEXT -->` (repeatable) asks for
TEXT in the block's stdout.

Placeholders replaced before a block runs: `tcp://127.0.0.1:5555` (the bind of configs/server.yaml)
by the server's endpoint; `http://127.0.0.1:8000/v1` by a stand-in OpenAI-compatible chat endpoint
(its model lists the files, once per turn); `build/tools/kforge` by the built binary ($KFORGE_BIN);
the server command's `--record FILE` by FILE in the server's temporary folder (not the checkout).
"""
import dataclasses
import http.server
import os
import re
import select
import shlex
import socket
import subprocess
import sys
import threading

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "rollout"))
from client_harness import StandInChat  # noqa: E402  (the stand-in chat endpoint the client's tests use)

SOURCE_DIR = os.environ.get("KFORGE_SOURCE_DIR", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
KFORGE = os.environ.get("KFORGE_BIN", os.path.join(SOURCE_DIR, "build", "tools", "kforge"))
DOCS = ["README.md", "ARCHITECTURE.md", "rollout/PROTOCOL.md", "tools/python/README.md", "tools/dataset/task_import/README.md",
        "tools/python/docs/verl.md", "tools/python/docs/verifiers.md"]
# Docs that must hold at least one example that runs (a parser that finds nothing must not pass).
DOCS_WITH_RUN_EXAMPLES = ["rollout/PROTOCOL.md", "tools/python/README.md", "tools/dataset/task_import/README.md"]
# The trainer adapters' pages (tools/python/docs/).
ADAPTER_DOCS = ["tools/python/docs/gymnasium.md", "tools/python/docs/skyrl.md"]
DOCS += ADAPTER_DOCS
DOCS_WITH_RUN_EXAMPLES += ADAPTER_DOCS
ENDPOINT = "tcp://127.0.0.1:5555"
CHAT_URL = "http://127.0.0.1:8000/v1"
KFORGE_IN_DOCS = "build/tools/kforge"
RUN_LANGS = {"python", "sh", "bash"}
TAG_KEYS = {"skip", "server", "expect"}
BLOCK_TIMEOUT_S = 60
START_TIMEOUT_S = 60

MARKER = re.compile(r"^\s*<!--\s*doc-test:\s*([A-Za-z-]+)\s*(?::\s*(.*?))?\s*-->\s*$")
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([^\s`]*)[^`]*$")


@dataclasses.dataclass
class Block:
    doc: str
    line: int  # 1-based line of the opening fence
    lang: str
    code: str
    tags: list  # [(key, value)]

    def tag(self, key):
        return [v for k, v in self.tags if k == key]

    @property
    def id(self):
        return f"{self.doc}:{self.line}"


def parse_markdown(text, doc="<text>"):
    """The fenced blocks of a Markdown text with their doc-test markers, and the marker problems found."""
    blocks, problems, pending = [], [], []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        m = MARKER.match(line)
        if m:
            key, value = m.group(1), (m.group(2) or "").strip()
            if key not in TAG_KEYS:
                problems.append(f"{doc}:{i + 1}: unknown doc-test marker '{key}' (known: {', '.join(sorted(TAG_KEYS))})")
            pending.append((key, value, i + 1))
            i += 1
            continue
        f = FENCE.match(line)
        if f:
            fence, lang = f.group(2), f.group(3).lower()
            body, j = [], i + 1
            while j < len(lines) and not re.match(r"^\s*" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}\s*$", lines[j]):
                body.append(lines[j])
                j += 1
            if j == len(lines):
                problems.append(f"{doc}:{i + 1}: a code block that is never closed")
            blocks.append(Block(doc, i + 1, lang, "\n".join(body) + "\n", [(k, v) for k, v, _ in pending]))
            pending = []
            i = j + 1
            continue
        if line.strip() and pending:
            problems.append(f"{doc}:{pending[0][2]}: doc-test marker not followed by a code block")
            pending = []
        i += 1
    if pending:
        problems.append(f"{doc}:{pending[0][2]}: doc-test marker not followed by a code block")
    return blocks, problems


def classify(block):
    """'run', 'server' or 'skip', or raises AssertionError saying what is wrong with the block's markers."""
    skip, server = block.tag("skip"), block.tag("server")
    where = f"{block.id} (```{block.lang or 'no language'})"
    if skip:
        assert len(skip) == 1 and len(skip[0]) >= 10, f"{where}: a skipped block needs its reason: <!-- doc-test: skip: REASON -->"
        assert not server and not block.tag("expect"), f"{where}: a skipped block cannot also be run or expect output"
        return "skip"
    if server:
        assert block.lang in ("sh", "bash"), f"{where}: the server block must be a shell command"
        assert server == [""], f"{where}: <!-- doc-test: server --> takes no value"
        return "server"
    assert block.lang in RUN_LANGS, (f"{where}: neither run ({', '.join(sorted(RUN_LANGS))}) nor tagged "
                                     f"<!-- doc-test: skip: REASON -->")
    assert all(block.tag("expect")), f"{where}: an empty expect marker"
    return "run"


def load_docs():
    blocks, problems = [], []
    for doc in DOCS:
        with open(os.path.join(SOURCE_DIR, doc), encoding="utf-8") as f:
            b, p = parse_markdown(f.read(), doc)
        blocks += b
        problems += p
    return blocks, problems


BLOCKS, PROBLEMS = load_docs()


def runnable(blocks):
    out = []
    for b in blocks:
        try:
            if classify(b) == "run":
                out.append(b)
        except AssertionError:
            pass  # test_every_block_is_run_or_skipped_with_a_reason reports it
    return out


# ---- the server and the stand-in chat endpoint ----

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_command(blocks):
    commands = {b.code.strip() for b in blocks if b.tag("server")}
    assert len(commands) == 1, f"the docs must name one server command, not {sorted(commands)}"
    (command,) = commands
    argv = shlex.split(command)
    assert argv[:2] == [KFORGE_IN_DOCS, "serve"], f"the server block must run `{KFORGE_IN_DOCS} serve ...`: {command}"
    return argv


class Server:
    def __init__(self, argv, log_path):
        self.endpoint = f"tcp://127.0.0.1:{free_port()}"
        env = dict(os.environ, CUDA_VISIBLE_DEVICES="")  # the examples must run without a GPU, on any host
        self.log = open(log_path, "w")
        argv = list(argv)
        if "--record" in argv[:-1]:
            at = argv.index("--record") + 1
            argv[at] = os.path.join(os.path.dirname(str(log_path)), os.path.basename(argv[at]))
        self.proc = subprocess.Popen([KFORGE, *argv[1:], "--bind", self.endpoint], cwd=SOURCE_DIR, env=env,
                                     stdout=subprocess.PIPE, stderr=self.log, text=True)
        ready, _, _ = select.select([self.proc.stdout], [], [], START_TIMEOUT_S)
        self.line = self.proc.stdout.readline() if ready else f"(nothing printed within {START_TIMEOUT_S} s)"
        if not self.line.startswith("kforge serve: listening on"):
            self.stop()
            raise AssertionError(f"the documented server did not start: {self.line!r}\n" + open(log_path).read())

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


class ListFilesChat(StandInChat):
    """An OpenAI-compatible /v1/chat/completions whose model calls list_files every turn."""
    requests = []

    def answer(self, body):
        ListFilesChat.requests.append(body)
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": f"call_{len(ListFilesChat.requests)}", "type": "function",
             "function": {"name": "list_files", "arguments": "{}"}}]}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = Server(server_command(BLOCKS), tmp_path_factory.mktemp("serve") / "serve.log")
    yield s
    s.stop()


@pytest.fixture(scope="module")
def chat_url():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), ListFilesChat)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()


# ---- running a block ----

def substitute(code, endpoint, chat_url):
    return code.replace(ENDPOINT, endpoint).replace(CHAT_URL, chat_url).replace(KFORGE_IN_DOCS, KFORGE)


def run_block(block, endpoint, chat_url, tmp_path):
    """Runs a block as the docs say it runs; returns the CompletedProcess."""
    code = substitute(block.code, endpoint, chat_url)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [os.path.join(SOURCE_DIR, "tools", "python"),
                                                                   os.environ.get("PYTHONPATH")])))
    if block.lang == "python":
        script = tmp_path / "example.py"
        script.write_text(code)
        argv, cwd = [sys.executable, str(script)], SOURCE_DIR
    else:
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir(exist_ok=True)
        shim = bin_dir / "kforge-evaluate"  # what `pip install tools/python` puts in the venv
        shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m kforge_client.evaluate "$@"\n')
        shim.chmod(0o755)
        env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
        cwd = tmp_path / "cwd"
        cwd.mkdir(exist_ok=True)
        argv = ["bash", "-euo", "pipefail", "-c", code]
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=BLOCK_TIMEOUT_S)


def check_result(block, result):
    out = f"--- {block.id} ({block.lang}), exit {result.returncode}\n--- stdout:\n{result.stdout}\n--- stderr:\n{result.stderr}"
    assert result.returncode == 0, out
    for text in block.tag("expect"):
        assert text in result.stdout, f"expected {text!r} in the output\n{out}"


# ---- tests ----

def test_every_block_is_run_or_skipped_with_a_reason():
    assert not PROBLEMS, "\n".join(PROBLEMS)
    assert BLOCKS, f"no code blocks found in {DOCS}"
    bad = []
    for b in BLOCKS:
        try:
            classify(b)
        except AssertionError as e:
            bad.append(str(e))
    assert not bad, "\n".join(bad)


def test_the_docs_have_examples_that_run():
    run = runnable(BLOCKS)
    for doc in DOCS_WITH_RUN_EXAMPLES:
        assert any(b.doc == doc for b in run), f"{doc} has no example the test runs"
    assert any(b.lang == "python" for b in run) and any(b.lang in ("sh", "bash") for b in run)
    server_command(BLOCKS)
    # Every example that talks to a server uses the placeholder the test replaces.
    for b in run:
        for endpoint in re.findall(r"tcp://[\w.:-]+", b.code):
            assert endpoint in (ENDPOINT, "tcp://127.0.0.1:9"), f"{b.id}: {endpoint} (use {ENDPOINT})"


def test_the_client_readme_names_every_error_kind_of_the_protocol():
    with open(os.path.join(SOURCE_DIR, "rollout", "PROTOCOL.md"), encoding="utf-8") as f:
        protocol = f.read()
    table = protocol[protocol.index("## Errors"):protocol.index("## Limits")]
    kinds = re.findall(r"^\| `([a-z_]+)` \|", table, re.M)
    assert len(kinds) >= 10, kinds
    with open(os.path.join(SOURCE_DIR, "tools", "python", "README.md"), encoding="utf-8") as f:
        readme = f.read()
    missing = [k for k in kinds if f"`{k}`" not in readme]
    assert not missing, f"tools/python/README.md does not name these error kinds of rollout/PROTOCOL.md: {missing}"


def test_the_client_readme_documents_every_flag_of_kforge_evaluate():
    with open(os.path.join(SOURCE_DIR, "tools", "python", "kforge_client", "evaluate.py"), encoding="utf-8") as f:
        flags = re.findall(r"add_argument\(\"(--[a-z-]+)\"", f.read())
    assert len(flags) >= 10, flags
    with open(os.path.join(SOURCE_DIR, "tools", "python", "README.md"), encoding="utf-8") as f:
        table = [line for line in f if line.startswith("| `--")]
    missing = [flag for flag in flags if not any(f"`{flag}" in line for line in table)]
    assert not missing, f"tools/python/README.md's kforge-evaluate table lacks {missing}"


def test_the_documented_server_has_no_gpu_lane_here(server):
    # The examples' GPU tools must answer their no-GPU observation, whatever host runs this test.
    assert "0 GPU lane" in server.line or "no GPU lane" in server.line, server.line


@pytest.mark.parametrize("block", runnable(BLOCKS), ids=lambda b: b.id)
def test_doc_example(block, server, chat_url, tmp_path):
    check_result(block, run_block(block, server.endpoint, chat_url, tmp_path))


def test_the_checks_catch_broken_examples(server, chat_url, tmp_path):
    text = "\n".join([
        "<!-- doc-test: skip: -->", "```sh", "true", "```",
        "```cpp", "int main() {}", "```",
        "<!-- doc-test: expect: ok -->", "```python", "print('no')", "```",
        "```python", "raise SystemExit(3)", "```",
        "<!-- doc-test: server -->", "",
        "text", "<!-- doc-test: bogus -->", "```python", "```"])
    blocks, problems = parse_markdown(text, "broken.md")
    assert [b.lang for b in blocks] == ["sh", "cpp", "python", "python", "python"]
    assert any("not followed by a code block" in p for p in problems), problems
    assert any("unknown doc-test marker 'bogus'" in p for p in problems), problems
    with pytest.raises(AssertionError, match="needs its reason"):
        classify(blocks[0])
    with pytest.raises(AssertionError, match="neither run"):
        classify(blocks[1])
    for b in blocks[2:4]:
        assert classify(b) == "run"
        with pytest.raises(AssertionError):
            check_result(b, run_block(b, server.endpoint, chat_url, tmp_path))
