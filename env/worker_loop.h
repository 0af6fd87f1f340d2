#pragma once
// The request loop every worker executable runs: read a framed request, answer it, repeat until
// the caller says "shutdown" or closes the pipe. Shared by the compile worker and the GPU worker.
#include <functional>

#include "env/worker_protocol.h"

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
};

// Parses --device --request-fd --reply-fd --seccomp --cache-dir (and --mode, checked against `mode`).
WorkerArgs parse_worker_args(int argc, char** argv, const std::string& mode);

// Serves requests until shutdown. `hello` answers "hello" (a hello with ok=false makes the worker
// exit after sending it). Test hooks (test_crash, test_sleep, test_sandbox, test_fatal) answer
// only when KFORGE_WORKER_TEST_HOOKS=1. Returns the process exit code.
int serve_worker(const WorkerArgs& args, const Json& hello, const std::function<Json(const Json&)>& handle);

}  // namespace kforge
