#pragma once
// The request loop every worker executable runs: read a framed request, answer it, repeat until
// the caller says "shutdown" or closes the pipe. Shared by the compile worker and the GPU worker.
#include <functional>
#include <string>

#include "env/process/worker_protocol.h"

namespace kforge {

// Thrown by a handler when the worker's state is lost (a sticky CUDA error): `reply` is sent, then
// the process exits without running destructors.
struct FatalWorkerError : std::runtime_error {
  Json reply;
  explicit FatalWorkerError(Json r) : std::runtime_error("fatal worker error"), reply(std::move(r)) {}
};

struct WorkerArgs {
  std::string mode;
  int device = 0;
  int request_fd = 0;
  int reply_fd = 1;
  bool seccomp = true;
  std::string cache_dir;  // compile workers: the on-disk result cache ("" = none)
  // Compile workers: build the CUB prelude's precompiled header before saying hello (--warm-up 1,
  // the default). A caller with one candidate and nothing to overlap the warm-up with (`kforge
  // eval --check`) says 0: a CUB candidate then creates the header in its own compile.
  bool warm_up = true;
};

// A worker's start-up, for its hello's "startup" map (the caller's cold-start breakdown):
// construct it first thing in main, mark() after each phase, then json() once ready:
// {"preinit_ns", "main_ns", "ready_ns" (monotonic_ns(): dynamic loading done, main entered, ready
// for requests), "phases_ms": {name: wall ms}}.
class StartupClock {
 public:
  StartupClock() : main_ns_(monotonic_ns()), last_ns_(main_ns_) {}
  void mark(const std::string& phase) {
    int64_t now = monotonic_ns();
    phases_[phase] = static_cast<double>(now - last_ns_) / 1e6;
    last_ns_ = now;
  }
  Json json() const {
    return {{"preinit_ns", preinit_monotonic_ns()}, {"main_ns", main_ns_}, {"ready_ns", monotonic_ns()}, {"phases_ms", phases_}};
  }

 private:
  int64_t main_ns_, last_ns_;
  Json phases_ = Json::object();
};

// Parses --device --request-fd --reply-fd --seccomp --cache-dir --warm-up (and --mode, checked against `mode`).
WorkerArgs parse_worker_args(int argc, char** argv, const std::string& mode);

// Serves requests until shutdown. `hello` answers "hello" (a hello with ok=false makes the worker
// exit after sending it). Test hooks (test_crash, test_sleep, test_sandbox, test_fatal) answer
// only when KFORGE_WORKER_TEST_HOOKS=1. Returns the process exit code.
int serve_worker(const WorkerArgs& args, const Json& hello, const std::function<Json(const Json&)>& handle);

}  // namespace kforge
