// Linked into every GPU test binary (tests/CMakeLists.txt): on a fatal signal the test prints the
// stack's frames to stderr before dying as it would have, so that a crash on the GPU host, where
// there is no debugger, comes back with the functions it happened in (the binaries are linked with
// -rdynamic, which names them). Only async-signal-safe calls in the handler.
//
// The unwinder stops at a frame it has no unwind information for: a call through a null or stale
// function pointer (the program counter at 0 or in unmapped memory) gave only the handler's own
// frames (ImportedTaskGpu on the H100, 2026-12-07). So the handler also prints the faulting
// address, the program counter, and the word at the stack pointer, which right after such a call
// is the caller's return address, each by name where it has one, and the thread's id.
#include <execinfo.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstring>
#include <initializer_list>

namespace {

void put(const char* s) {
  ssize_t ignored = write(STDERR_FILENO, s, std::strlen(s));
  (void)ignored;
}

// "0x" and 16 hex digits, without printf (not async-signal-safe).
void put_hex(uintptr_t v) {
  char buf[19] = "0x";
  for (int i = 0; i < 16; ++i) buf[2 + i] = "0123456789abcdef"[(v >> (60 - 4 * i)) & 0xf];
  buf[18] = 0;
  put(buf);
}

void put_dec(long v) {
  char buf[24];
  int i = 23;
  buf[i] = 0;
  do {
    buf[--i] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v > 0 && i > 0);
  put(buf + i);
}

// One labelled address, then its symbol line (backtrace_symbols_fd names it where it can).
void put_address(const char* label, uintptr_t a) {
  put(label);
  put_hex(a);
  put("\n");
  if (a != 0) {
    void* one[1] = {reinterpret_cast<void*>(a)};
    backtrace_symbols_fd(one, 1, STDERR_FILENO);
  }
}

void print_frames(int sig, siginfo_t* info, void* context) {
  put("KFORGE_BACKTRACE: fatal signal ");
  put_dec(sig);
  put(" in thread ");
  put_dec(static_cast<long>(syscall(SYS_gettid)));
  put(" (the process's main thread is ");
  put_dec(static_cast<long>(getpid()));
  put(")\n");
  put_address("KFORGE_BACKTRACE: faulting address ", reinterpret_cast<uintptr_t>(info ? info->si_addr : nullptr));
#if defined(__x86_64__)
  if (context) {
    const auto* uc = static_cast<const ucontext_t*>(context);
    const auto pc = static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RIP]);
    const auto sp = static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RSP]);
    put_address("KFORGE_BACKTRACE: program counter ", pc);
    // Right after a call to a bad address, the stack's top word is the caller's return address.
    if (sp != 0 && sp % sizeof(uintptr_t) == 0)
      put_address("KFORGE_BACKTRACE: word at the stack pointer ", *reinterpret_cast<const uintptr_t*>(sp));
  }
#endif
  void* frames[64];
  const int n = backtrace(frames, 64);
  put("KFORGE_BACKTRACE: the frames, innermost first:\n");
  backtrace_symbols_fd(frames, n, STDERR_FILENO);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

struct Install {
  Install() {
    void* warm[1];
    backtrace(warm, 1);  // loads libgcc's unwinder now, not inside the handler
    struct sigaction sa {};
    sa.sa_sigaction = print_frames;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) sigaction(sig, &sa, nullptr);
  }
} install;

}  // namespace
