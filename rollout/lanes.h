#pragma once
// Where a step runs. The front thread (the one that owns the ROUTER socket) answers everything
// that needs no compiler and no GPU itself; compile() steps go to a pool of CPU threads, each
// with its own compile worker process; verify/profile/submit go to the queue of the episode's
// GPU, whose one thread owns that GPU's Evaluator, so at most one candidate is timed on a GPU at
// a time. Finished steps come back to the front thread through an Inbox; nothing but the front
// thread touches a socket.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "env/episode/episode.h"
#include "env/process/clock.h"
#include "rollout/protocol.h"

namespace kforge {

struct Session;

const char* lane_name(Lane lane);

// One step of one episode, from the request to its reply.
struct StepJob {
  enum State { queued, running, done, cancelled };
  uint64_t id = 0;
  std::shared_ptr<Session> session;
  Envelope to;
  Json action;
  ParsedAction parsed;  // the action, parsed once (its lane comes from its tool: tool_call.h's table)
  Lane lane = Lane::front;
  int gpu = -1;
  Clock::time_point received, started, finished;
  std::optional<StepResult> result;
  std::string failure;  // set when step() itself threw (a server bug): answered as `internal`
  std::atomic<int> state{queued};
  // A warm compile (scheduler.warm_compiles): no session and no reply; a compile thread builds
  // this candidate of this task into the shared cache ahead of its GPU step.
  struct Warm {
    TaskSpec task;
    Candidate candidate;
    std::string arch;  // the GPU lane's compile target ("" before its worker said hello)
  };
  std::shared_ptr<const Warm> warm;
};
using StepJobPtr = std::shared_ptr<StepJob>;

// A FIFO of steps served by one or more threads, with a bound and cancellation of queued steps.
class WorkQueue {
 public:
  explicit WorkQueue(size_t max_queued) : max_(max_queued) {}
  // False when the queue is full (the caller answers `busy`).
  bool push(StepJobPtr job);
  // Blocks for the next job (the oldest step, else the oldest warm compile); nullptr once stopped.
  StepJobPtr pop();
  // Takes a queued job out; false when it already started (or was never here).
  bool remove(const StepJobPtr& job);
  std::deque<StepJobPtr> drain();
  void stop();
  void finished(double service_s);
  size_t queued() const;
  int running() const { return running_; }
  uint64_t done() const { return done_; }
  // Seconds until a slot is likely free: the queue ahead divided among the threads, at the recent
  // mean service time; at least min_s.
  double retry_after(int threads, double min_s) const;

 private:
  mutable std::mutex m_;
  std::condition_variable cv_;
  std::deque<StepJobPtr> q_;
  size_t max_;
  bool stopped_ = false;
  std::atomic<int> running_{0};
  std::atomic<uint64_t> done_{0};
  double mean_service_s_ = 1.0;  // exponentially weighted
};

// Work handed back to the front thread: closures it runs, and a file descriptor (an eventfd) it
// polls beside its sockets to learn that some are waiting.
class Inbox {
 public:
  Inbox();
  ~Inbox();
  void post(std::function<void()> fn);
  // Runs everything posted so far (on the front thread).
  size_t run_all();
  int fd() const { return fd_; }

 private:
  std::mutex m_;
  std::deque<std::function<void()>> q_;
  int fd_ = -1;
};

// The GPU lanes a server starts (scheduler.gpus: -1 = one per visible device, 0 = none, N = N) and
// what was found, in words that are true on this machine: "2 GPU lanes: GPU 0 NVIDIA H200, GPU 1
// NVIDIA H200", or "no GPU lanes: no GPU is visible (no NVIDIA driver is loaded ...)". Asks the CUDA
// runtime for the count and the names only (no context). A count above the visible devices is a
// config error.
struct GpuLanes {
  int count = 0;
  std::vector<std::string> names;  // per visible device
  std::string summary;             // for the start-up line
};
GpuLanes detect_gpu_lanes(int configured);

// What a GPU tool answers on a server without GPU lanes (an observation, not an error reply).
extern const char* const kNoGpuKind;  // "no_gpu": info.report.harness_error.kind

// The judge of one lane: its compile evaluator (check) and, on a GPU lane, its GPU's evaluator
// (check and evaluate). A lane hands its own to the episode before it runs the episode's step
// (KernelEnv::set_judge); the front thread's judge has no evaluator. A GPU tool on a server
// without GPUs throws NotJudged of kind `no_gpu` (nothing was judged; info.report.harness_error):
// the policy reads it, the episode goes on.
class LaneJudge final : public CandidateJudge {
 public:
  LaneJudge(EvalConfig config, bool has_gpus, Evaluator* compile = nullptr, Evaluator* gpu = nullptr)
      : config_(std::move(config)), has_gpus_(has_gpus), compile_(compile), gpu_(gpu) {}
  EvalReport check(const TaskSpec& task, const Candidate& candidate) override;
  EvalReport evaluate(const TaskSpec& task, const Candidate& candidate, const EvalOptions& options) override;
  const EvalConfig& eval_config() const override { return config_; }

 private:
  EvalConfig config_;
  bool has_gpus_;
  Evaluator* compile_;
  Evaluator* gpu_;
};

}  // namespace kforge
