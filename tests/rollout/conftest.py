"""The `server` fixture of the Python client's suites: a fresh `kforge serve` (no GPU lanes, one
compile worker, recording) per test, stopped after it."""
import pytest

from client_harness import Server


@pytest.fixture
def server(tmp_path):
    s = Server(tmp_path)
    yield s
    s.stop()
