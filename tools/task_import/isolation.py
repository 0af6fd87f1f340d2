"""Each module examined in a forked child: a module that crashes the interpreter (a segfault in
native code), hangs inside one native call (which the alarm cannot interrupt), or changes torch's
global state ends with its child, and the run goes on. The child sends back the Analysis or the
Skip, pickled, through a pipe; the parent kills it past a deadline.

Fork after torch is imported is safe here because the parent only ever runs torch on one thread
(no OpenMP pool to inherit) and never touches CUDA; the child restores the thread count."""
import os
import pickle
import select
import signal
import time

from .common import Skip, one_line


def examine_in_child(item, module_name, opts, threads):
    """Forks; the child runs classify.analyze. Returns the Analysis or raises Skip."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(r)
        code = 0
        try:
            import torch
            torch.set_num_threads(threads)
            from .classify import analyze
            result = ("ok", analyze(item, module_name, opts))
        except Skip as s:
            result = ("skip", s.reason, s.detail)
        except BaseException as e:  # noqa: B036  (the child reports everything)
            result = ("skip", "load_error", f"importer error: {type(e).__name__}: {one_line(e)}")
        try:
            with os.fdopen(w, "wb") as f:
                f.write(pickle.dumps(result))
        except BaseException:  # noqa: B036
            code = 1
        os._exit(code)
    os.close(w)
    limit = 2 * opts.timeout_s + 10  # the load limit, the run limit, and slack
    data, killed = read_until(r, pid, time.monotonic() + limit)
    _, status = os.waitpid(pid, 0)
    if killed:
        raise Skip("too_large", f"the module's worker was killed after {limit:g} s (past its time limits: "
                   "one native call that long, or a module that silenced the alarm)")
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        raise Skip("load_error", f"the module crashed its worker ({signal.Signals(sig).name})")
    try:
        result = pickle.loads(data)
    except Exception:
        raise Skip("load_error", f"the module's worker exited with status {os.WEXITSTATUS(status)} and no result") from None
    if result[0] == "skip":
        raise Skip(result[1], result[2])
    return result[1]


def read_until(fd, pid, deadline):
    """(bytes read until EOF, whether the child was killed at the deadline)."""
    chunks = []
    with os.fdopen(fd, "rb", buffering=0) as f:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                os.kill(pid, signal.SIGKILL)
                return b"", True
            ready, _, _ = select.select([f], [], [], min(left, 1.0))
            if not ready:
                continue
            chunk = f.read(1 << 20)
            if not chunk:
                return b"".join(chunks), False
            chunks.append(chunk)
