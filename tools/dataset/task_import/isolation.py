"""Each module examined in a forked worker, confined by sandbox.py: a module that crashes the
interpreter (a segfault in native code), hangs inside one native call (which the alarm cannot
interrupt), changes torch's global state, exhausts memory, forks without end, leaves daemons
behind or signals its parent ends with its worker, and the run goes on. The worker sends back the
Analysis or the Skip, pickled, through a pipe; the parent kills it past a deadline, then kills
whatever it left behind.

Fork after torch is imported is safe here because the parent only ever runs torch on one thread
(no OpenMP pool to inherit) and never touches CUDA; the child restores the thread count."""
import os
import pickle
import select
import signal
import threading
import time

from . import sandbox
from .common import Skip, one_line

# Workers run side by side (cli.py --jobs), each examined from a thread of the importer: forks and
# sweeps of stray children take FORK_LOCK, and a sweep spares the workers still running (LIVE). The
# importer's own output takes it too: a fork while another thread held stderr's lock would leave the
# child's copy of that lock held for ever.
FORK_LOCK = threading.Lock()
LIVE = set()
OUTPUT_KEPT = 64 << 10  # bytes of a worker's stdout and stderr kept (the rest is read and dropped)
MiB = 1 << 20


def limits_for(opts, threads):
    """The worker's resource limits from the options (README.md, The sandbox)."""
    cpu = int(threads * (2 * opts.timeout_s + 10)) + 1  # both time limits on every thread, and slack
    return sandbox.Limits(memory_bytes=opts.memory_mb * MiB, cpu_s=cpu, processes=opts.max_processes)


def worker(item, module_name, opts, threads, workdir, ids, result_fd, output_fd):
    """The forked child: confines itself, runs classify.analyze, writes the result. Never returns."""
    code = 0
    try:
        result_fd = sandbox.enter(limits_for(opts, threads), workdir, ids, result_fd, output_fd, threads)
        import torch
        torch.set_num_threads(threads)
        from .classify import analyze
        result = ("ok", analyze(item, module_name, opts))
    except Skip as s:
        result = ("skip", s.reason, s.detail)
    except MemoryError:
        result = ("skip", "too_large", f"the module ran out of the worker's memory (--memory-mb {opts.memory_mb})")
    except BaseException as e:  # noqa: B036  (the child reports everything)
        result = ("skip", "load_error", f"importer error: {type(e).__name__}: {one_line(e)}")
    try:
        with os.fdopen(result_fd, "wb") as f:
            f.write(pickle.dumps(result))
    except BaseException:  # noqa: B036
        code = 1
    os._exit(code)


def examine_in_child(item, module_name, opts, threads):
    """Forks a confined worker that runs classify.analyze. Returns the Analysis or raises Skip."""
    ids = sandbox.unprivileged_ids()
    workdir = sandbox.private_dir(ids)
    pid = None
    try:
        with FORK_LOCK:  # no other worker inherits this one's pipe ends; no sweep sees it unregistered
            r, w = os.pipe()
            out_r, out_w = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(r)
                os.close(out_r)
                worker(item, module_name, opts, threads, workdir, ids, w, out_w)
            LIVE.add(pid)
            os.close(w)
            os.close(out_w)
        limit = 2 * opts.timeout_s + 10  # the load limit, the run limit, and slack
        data, output, status, killed = collect(r, out_r, pid, time.monotonic() + limit)
    finally:
        with FORK_LOCK:
            LIVE.discard(pid)
            sandbox.sweep_strays(keep=set(LIVE))  # what the worker left behind (setsid daemons, a fork bomb's rest)
        sandbox.remove_dir(workdir)
    return outcome(data, output, status, killed, limit)


def outcome(data, output, status, killed, limit):
    if killed:
        raise Skip("too_large", f"the module's worker was killed after {limit:g} s (past its time limits: "
                   "one native call that long, or a module that silenced the alarm)")
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        why = {signal.SIGXCPU: ", past its CPU time limit", signal.SIGXFSZ: ", past its file size limit"}.get(sig, "")
        tail = one_line(output.decode("utf-8", "replace").strip()[-200:]) if output.strip() else ""
        raise Skip("load_error", f"the module crashed its worker ({signal.Signals(sig).name}{why})"
                   + (f"; its last output: {tail}" if tail else ""))
    try:
        result = pickle.loads(data)
    except Exception:
        raise Skip("load_error", f"the module's worker exited with status {os.WEXITSTATUS(status)} and no result") from None
    if result[0] == "skip":
        raise Skip(result[1], result[2])
    return result[1]


def collect(fd, out_fd, pid, deadline):
    """Reads the result pipe and the output pipe (keeping OUTPUT_KEPT bytes of output) until the
    worker has exited, or kills its process group at the deadline. Returns (result bytes, output,
    wait status, whether it was killed). A worker's leftover processes that hold the pipes open do
    not keep the parent waiting: the worker's own exit ends the wait."""
    chunks, output, status = [], b"", None
    with os.fdopen(fd, "rb", buffering=0) as f, os.fdopen(out_fd, "rb", buffering=0) as out:
        open_files = [f, out]
        while True:
            if status is None:  # once reaped, never again (waitpid would raise ChildProcessError)
                done, st = os.waitpid(pid, os.WNOHANG)
                if done:
                    status = st
            left = deadline - time.monotonic()
            if status is None and left <= 0:
                kill_group(pid)
                os.waitpid(pid, 0)
                return b"", output, None, True
            ready, _, _ = select.select(open_files, [], [], 0 if status is not None else min(max(left, 0), 0.2))
            if not ready and status is not None:
                break
            for g in ready:
                chunk = g.read(1 << 20)
                if not chunk:
                    open_files.remove(g)
                elif g is f:
                    chunks.append(chunk)
                else:
                    output = (output + chunk)[-OUTPUT_KEPT:]
            if not open_files and status is None:
                _, status = os.waitpid(pid, 0)
                break
    kill_group(pid)
    return b"".join(chunks), output, status, False


def kill_group(pid):
    """SIGKILL to the worker's process group (its session's leader is the worker) and the worker."""
    for kill in (os.killpg, os.kill):
        try:
            kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
