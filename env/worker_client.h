#pragma once
// Supervision of one worker process: start it (fork + exec, resource limits, dies with us),
// exchange framed msgpack messages over two pipes, and turn every way it can fail into a typed
// reply: a request that outlives its timeout kills the worker (`timeout`); a worker that dies
// mid-request (`worker_crashed`, with its exit status or signal). The next call starts a fresh
// worker, so one bad candidate costs its own request and a restart, nothing else.
#include <string>
#include <utility>
#include <vector>

#include <sys/types.h>

#include "env/worker_protocol.h"

namespace kforge {

struct WorkerSpawn {
  std::string executable;
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;  // set in the child
  int64_t max_file_bytes = 0;      // RLIMIT_FSIZE (0: unchanged)
  int64_t max_open_files = 0;      // RLIMIT_NOFILE
  int64_t max_address_space = 0;   // RLIMIT_AS (not for GPU workers: CUDA reserves huge ranges)
  double start_timeout_s = 120;    // for the hello exchange after exec
};

struct WorkerReply {
  bool ok = false;
  Json body;                 // the whole reply (also on errors: partial results)
  std::string error_kind;    // worker_error::...
  std::string error_message;
  double wall_ms = 0;        // request written to reply read
};

class WorkerProcess {
 public:
  explicit WorkerProcess(WorkerSpawn spawn);
  ~WorkerProcess();
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  // Starts the worker if needed, sends the request, waits up to timeout_s.
  WorkerReply call(const Json& request, double timeout_s);
  // The hello reply of the running worker (starts it if needed); throws a runtime error if it cannot start.
  const Json& hello();
  void stop();  // asks the worker to exit, then kills it if it does not
  int starts() const { return starts_; }
  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0; }

 private:
  // Returns "" on success, else why the worker could not start.
  std::string start();
  // Kills (SIGKILL) and reaps; returns a description of how it ended.
  std::string kill_and_reap();
  // Reaps the worker if it exits within ms; false if it is still running.
  bool reap_within(int ms);
  std::string reap_description(int status) const;

  WorkerSpawn spawn_;
  pid_t pid_ = -1;
  int to_child_ = -1;
  int from_child_ = -1;
  int starts_ = 0;
  Json hello_;
};

// A worker executable ("kforge-worker", "kforge-compile-worker"): $KFORGE_WORKER_DIR/name, else
// beside the running executable or in its build tree's env/. Throws an io error when none is found.
std::string find_worker_executable(const std::string& name);

}  // namespace kforge
