"""What test suites in tests/rollout and tests/tools both ask: whether a process is alive (a zombie is
not), and the value of a figure a bench printed as `NAME VALUE` on a line of its own."""
import os
import re


def pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split(")")[-1].split()[0] != "Z"  # a zombie is gone but for its parent's wait


def figure(out, name):
    m = re.search(rf"^{name}\s+([0-9.]+)$", out, re.M)
    assert m, out
    return float(m.group(1))
