#include "env/process/sandbox.h"

#include <sched.h>
#include <cerrno>
#include <cstring>

#include <seccomp.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "configs/error.h"

namespace kforge {

namespace {

// The filter both sandboxes share: no sockets, tracing, reading other processes, mounts,
// namespaces, BPF, modules or reboots; the worker's also refuses new processes.
scmp_filter_ctx make_filter(bool refuse_processes) {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  KFORGE_CHECK(ctx != nullptr, runtime, "seccomp_init failed");
  auto deny = [&](int syscall_nr, int err = EPERM) {
    int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(err), syscall_nr, 0);
    if (rc != 0 && rc != -EDOM) {
      seccomp_release(ctx);
      KFORGE_FAIL(runtime, "seccomp rule for syscall " << syscall_nr << " failed: " << std::strerror(-rc));
    }
  };
  for (int nr : {SCMP_SYS(socket),
                 SCMP_SYS(socketpair),
                 SCMP_SYS(connect),
                 SCMP_SYS(bind),
                 SCMP_SYS(listen),
                 SCMP_SYS(accept),
                 SCMP_SYS(accept4),
                 SCMP_SYS(ptrace),
                 SCMP_SYS(process_vm_readv),
                 SCMP_SYS(process_vm_writev),
                 SCMP_SYS(kcmp),
                 SCMP_SYS(mount),
                 SCMP_SYS(umount2),
                 SCMP_SYS(pivot_root),
                 SCMP_SYS(chroot),
                 SCMP_SYS(setns),
                 SCMP_SYS(unshare),
                 SCMP_SYS(bpf),
                 SCMP_SYS(init_module),
                 SCMP_SYS(finit_module),
                 SCMP_SYS(delete_module),
                 SCMP_SYS(kexec_load),
                 SCMP_SYS(reboot),
                 SCMP_SYS(swapon),
                 SCMP_SYS(swapoff)})
    deny(nr);
  if (!refuse_processes) return ctx;
  for (int nr : {SCMP_SYS(execve), SCMP_SYS(execveat), SCMP_SYS(fork), SCMP_SYS(vfork)}) deny(nr);
  // clone3 takes its flags in a struct the filter cannot read: refuse it with ENOSYS so the C
  // library falls back to clone, whose flags it can: threads (CLONE_THREAD) pass, processes do not.
  deny(SCMP_SYS(clone3), ENOSYS);
  int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1, SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0));
  if (rc != 0) {
    seccomp_release(ctx);
    KFORGE_FAIL(runtime, "seccomp rule for clone failed: " << std::strerror(-rc));
  }
  return ctx;
}

}  // namespace

void install_worker_seccomp() {
  scmp_filter_ctx ctx = make_filter(true);
  int rc = seccomp_load(ctx);
  seccomp_release(ctx);
  KFORGE_CHECK(rc == 0, runtime, "seccomp_load failed: " << std::strerror(-rc));
}

std::string tool_seccomp_program() {
  scmp_filter_ctx ctx = make_filter(false);
  // libseccomp writes the program to a descriptor: a memory file, read back whole.
  int fd = ::memfd_create("kforge-seccomp", MFD_CLOEXEC);
  if (fd < 0) {
    seccomp_release(ctx);
    KFORGE_FAIL(runtime, "memfd_create failed: " << std::strerror(errno));
  }
  int rc = seccomp_export_bpf(ctx, fd);
  seccomp_release(ctx);
  std::string program;
  if (rc == 0) {
    char buf[4096];
    ::lseek(fd, 0, SEEK_SET);
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) program.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  KFORGE_CHECK(rc == 0 && !program.empty(), runtime, "seccomp_export_bpf failed: " << std::strerror(-rc));
  return program;
}

std::string probe_sandbox() {
  std::string out;
  auto note = [&](const char* what, bool refused, int err) {
    out += std::string(out.empty() ? "" : "; ") + what + ": " + (refused ? (err == EPERM ? "EPERM" : std::strerror(err)) : "ALLOWED");
  };
  errno = 0;
  pid_t p = ::fork();
  if (p == 0) _exit(0);
  if (p > 0) ::waitpid(p, nullptr, 0);
  note("fork", p < 0, errno);
  errno = 0;
  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  if (s >= 0) ::close(s);
  note("socket", s < 0, errno);
  // A path that does not exist: the filter answers EPERM before the kernel looks; without the
  // filter the kernel answers ENOENT (reached, so allowed), and nothing is replaced either way.
  errno = 0;
  char* argv[] = {const_cast<char*>("/nonexistent/kforge-sandbox-probe"), nullptr};
  ::execv(argv[0], argv);
  note("execve", errno == EPERM, errno);
  return out;
}

}  // namespace kforge
