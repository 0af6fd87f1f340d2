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

#include "env/process/worker_protocol.h"

namespace kforge {

struct WorkerSpawn {
  std::string executable;
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;  // set in the child
  int64_t max_file_bytes = 0;                            // RLIMIT_FSIZE (0: unchanged)
  int64_t max_open_files = 0;                            // RLIMIT_NOFILE
  int64_t max_address_space = 0;                         // RLIMIT_AS (not for GPU workers: CUDA reserves huge ranges)
  double start_timeout_s = 120;                          // for the hello exchange after exec
};

struct WorkerReply {
  bool ok = false;
  Json body;               // the whole reply (also on errors: partial results)
  std::string error_kind;  // worker_error::...
  std::string error_message;
  double wall_ms = 0;  // request written to reply read
};

// When the last start happened, on monotonic_ns() (worker_protocol.h); 0 where not reached.
struct WorkerStartTimes {
  int64_t spawn_ns = 0;  // just before fork
  int64_t hello_ns = 0;  // the hello reply read (later than the worker was ready when the caller was busy)
};

class WorkerProcess {
 public:
  explicit WorkerProcess(WorkerSpawn spawn);
  ~WorkerProcess();
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  // Starts the worker (fork, exec, the hello request written) without waiting for its hello, so
  // that several workers can start at once (a GPU worker's CUDA context while the compile worker
  // warms up); the next hello() or call() waits for the reply, within start_timeout_s of the
  // launch. Does nothing when the worker runs. False when it could not even be forked: the next
  // hello() or call() then tries again and reports why.
  bool launch();
  // Starts the worker if needed, sends the request, waits up to timeout_s.
  WorkerReply call(const Json& request, double timeout_s);
  // The hello reply of the running worker (starts it if needed); throws a runtime error if it cannot start.
  const Json& hello();
  // The last hello reply read (null before any; also one that refused to start), without
  // starting or waiting for anything.
  const Json& last_hello() const { return hello_; }
  const WorkerStartTimes& start_times() const { return times_; }
  // The last start as seen from both sides: the caller's timestamps and the hello's "startup"
  // (worker_loop.h StartupClock), as durations in ms: spawn_to_preinit_ms (fork, exec, dynamic
  // loading), static_init_ms (the libraries' initialisers, before main), init_ms (main to ready,
  // split in phases_ms), spawn_to_ready_ms, hello_wait_ms (ready to the hello read by the caller);
  // and spawn_at_ns, ready_at_ns. Null before a hello was read; a worker whose hello has no
  // "startup" gives the caller's figures alone.
  Json startup_report() const;
  // Asks the worker to exit without waiting: stop() then only waits. Stopping several workers this
  // way overlaps their exits (a GPU worker tearing down its context).
  void request_stop();
  // Asks the worker to exit (unless request_stop() did), then kills it if it does not within 2 s;
  // a worker launched but not yet ready is killed at once.
  void stop();
  // The executable, arguments and limits; a change applies from the next start.
  WorkerSpawn& spawn_settings() { return spawn_; }
  int starts() const { return starts_; }
  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0; }

 private:
  // Returns "" on success, else why the worker could not start: spawn(), then await_hello().
  std::string start();
  std::string spawn();        // fork + exec + the hello request
  std::string await_hello();  // the hello reply of a spawned worker
  // Kills (SIGKILL) and reaps; returns a description of how it ended.
  std::string kill_and_reap();
  // Reaps the worker if it exits within ms; false if it is still running.
  bool reap_within(int ms);
  void forget_child();  // closes the pipes after the worker was reaped
  std::string reap_description(int status) const;

  WorkerSpawn spawn_;
  pid_t pid_ = -1;
  int to_child_ = -1;
  int from_child_ = -1;
  int starts_ = 0;
  bool awaiting_hello_ = false;
  bool stop_requested_ = false;
  Json hello_;
  WorkerStartTimes times_;
};

// A worker executable ("kforge-worker", "kforge-compile-worker"): $KFORGE_WORKER_DIR/name, else
// beside the running executable or in its build tree's env/. Throws an io error when none is found.
std::string find_worker_executable(const std::string& name);

}  // namespace kforge
