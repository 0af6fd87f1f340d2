"""What a module's worker may do to the machine (README.md, "The sandbox"). isolation.py forks the
worker; enter() confines it before any of the module's code runs:

- its own session and process group, and where the kernel allows, a new PID namespace whose init
  is the worker: when it ends, the kernel kills everything it started, `setsid` orphans included
  (and the module cannot see, so cannot signal, the importer);
- resource limits: address space (RLIMIT_AS), CPU time, processes (RLIMIT_NPROC: a fork bomb
  stops there), file size, no core dumps;
- no inherited descriptors: stdin is /dev/null, stdout and stderr a pipe the importer reads and
  caps, every other descriptor but the result pipe closed;
- a minimal environment (PATH, HOME and TMPDIR in its private directory, LANG), none of the
  importer's variables;
- a private working directory, removed afterwards;
- run as root, the worker drops to the unprivileged user `nobody`: it can write only where anyone
  may (its directory, /tmp, /dev/shm), read only what anyone may, and signal none of the importer's
  processes.
The importer is a child subreaper (become_subreaper) and sweeps its stray children after each
module, for kernels without PID namespaces.
"""
import ctypes
import dataclasses
import os
import pwd
import resource
import shutil
import signal
import tempfile

CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
UNPRIVILEGED_USER = "nobody"
PATH = "/usr/local/bin:/usr/bin:/bin"

_libc = ctypes.CDLL(None, use_errno=True)


@dataclasses.dataclass
class Limits:
    memory_bytes: int  # RLIMIT_AS of the worker (its whole address space, torch's ~3 GB included)
    cpu_s: int  # RLIMIT_CPU (all its threads): SIGXCPU, then SIGKILL 5 s later
    processes: int = 256  # RLIMIT_NPROC: counts every process of the worker's user
    file_bytes: int = 256 << 20  # RLIMIT_FSIZE: no file it writes grows past this


def become_subreaper():
    """Orphans of the workers are reparented to this process rather than to init, so that
    sweep_strays() can find them."""
    _libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def unprivileged_ids():
    """(uid, gid) of `nobody` when running as root (the worker drops to them), else None."""
    if os.geteuid() != 0:
        return None
    try:
        pw = pwd.getpwnam(UNPRIVILEGED_USER)
    except KeyError:
        return None
    return pw.pw_uid, pw.pw_gid


def private_dir(ids):
    """A fresh directory only the worker's user may enter."""
    d = tempfile.mkdtemp(prefix="kforge-import-")
    if ids:
        os.chown(d, *ids)
    os.chmod(d, 0o700)
    return d


def remove_dir(d):
    shutil.rmtree(d, ignore_errors=True)


def new_pid_namespace():
    """unshare(CLONE_NEWPID) (with a user namespace when not root): this process's next child is the
    init of a new namespace. False where the kernel refuses."""
    flags = CLONE_NEWPID | (0 if os.geteuid() == 0 else CLONE_NEWUSER)
    return _libc.unshare(flags) == 0


def relay(child):
    """The worker's first half in a PID namespace: waits for the namespace's init and ends the
    same way it did (exit status or signal). Never returns."""
    while True:
        try:
            _, status = os.waitpid(child, 0)
            break
        except ChildProcessError:
            os._exit(1)
        except InterruptedError:
            continue
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


def enter(limits, workdir, ids, result_fd, output_fd, threads):
    """In the forked worker: confines it (this module's docstring). Returns the result pipe's
    descriptor as it is after the cleanup (the caller writes its result there)."""
    os.setsid()
    if new_pid_namespace():
        child = os.fork()
        if child:
            os.close(result_fd)  # only the namespace's init holds the result pipe
            os.close(output_fd)
            relay(child)
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(output_fd, 1)
    os.dup2(output_fd, 2)
    result = os.dup2(result_fd, 3) if result_fd != 3 else 3
    os.closerange(4, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
    os.chdir(workdir)
    for which, value in ((resource.RLIMIT_AS, limits.memory_bytes), (resource.RLIMIT_CPU, limits.cpu_s),
                         (resource.RLIMIT_NPROC, limits.processes), (resource.RLIMIT_FSIZE, limits.file_bytes),
                         (resource.RLIMIT_CORE, 0)):
        hard = value + 5 if which == resource.RLIMIT_CPU else value
        resource.setrlimit(which, (value, hard))
    if ids:
        os.setgroups([])
        os.setgid(ids[1])
        os.setuid(ids[0])
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # after setuid, which clears it
    os.environ.clear()
    os.environ.update(PATH=PATH, HOME=workdir, TMPDIR=workdir, LANG="C.UTF-8", OMP_NUM_THREADS=str(threads))
    tempfile.tempdir = workdir
    return result


def sweep_strays(keep=()):
    """SIGKILLs and reaps every child of this process but `keep` (a worker's orphans, reparented here
    by become_subreaper), until none is left. Returns how many were killed."""
    killed = 0
    for _ in range(100):
        strays = [p for p in children() if p not in keep]
        if not strays:
            return killed
        for pid in strays:
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except ProcessLookupError:
                pass
        for pid in strays:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
    return killed


def children():
    """The pids whose parent is this process (from /proc)."""
    me, out = os.getpid(), []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > 1 and int(fields[1]) == me:
            out.append(int(name))
    return out
