// Linked into every GPU test binary (tests/CMakeLists.txt): on a fatal signal the test prints the
// stack's frames to stderr before dying as it would have, so that a crash on the GPU host, where
// there is no debugger, comes back with the functions it happened in (the binaries are linked with
// -rdynamic, which names them). Only async-signal-safe calls in the handler.
#include <execinfo.h>
#include <unistd.h>

#include <csignal>
#include <initializer_list>

namespace {

void print_frames(int sig) {
  void* frames[64];
  const int n = backtrace(frames, 64);
  static const char kHead[] = "KFORGE_BACKTRACE: fatal signal; the frames, innermost first:\n";
  ssize_t ignored = write(STDERR_FILENO, kHead, sizeof kHead - 1);
  (void)ignored;
  backtrace_symbols_fd(frames, n, STDERR_FILENO);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

struct Install {
  Install() {
    void* warm[1];
    backtrace(warm, 1);  // loads libgcc's unwinder now, not inside the handler
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) std::signal(sig, print_frames);
  }
} install;

}  // namespace
