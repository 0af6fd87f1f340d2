#pragma once
// The rollout server's inside (server.h's RolloutServer::Impl): its state, the open episodes and
// the trajectory recorder. server.cpp holds set-up, lanes, the front loop and shutdown;
// server_episodes.cpp the episode requests (reset, step, close, cancel).

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>
#include <unordered_map>
#include <vector>

#include <unistd.h>

#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "configs/error.h"
#include "env/episode/tool_call.h"
#include "env/evaluator/evaluator.h"
#include "env/process/clock.h"
#include "rollout/lanes.h"
#include "rollout/task_catalog.h"
#include "rollout/trajectory_file.h"

#include "rollout/server.h"

namespace kforge {

// One open episode. Touched only by the front thread, except `env` while one of its steps runs
// on a lane (the front never touches env while `pending` is set).
struct Session {
  Session(std::string id_, EnvConfig env_cfg, RewardConfig reward, CandidateJudge& judge)
      : id(std::move(id_)), env(std::move(env_cfg), std::move(reward), judge) {}
  std::string id;
  KernelEnv env;
  std::shared_ptr<const TaskSpec> task;
  uint64_t seed = 0;
  Json options;
  int gpu = -1;
  double started_unix = 0;
  Clock::time_point started, last_activity;
  Json reset_record;
  Json turns = Json::array();
  StepJobPtr pending;        // the step queued or running, if any
  bool ended = false;        // terminated or truncated
  bool closed = false;       // closed by the client while a step ran
  bool recorded = false;     // its trajectory was handed to the stream and the recorder
  std::string record_error;  // why its trajectory is not yet on disk ("" once it is, or before it ended)
  std::string client;        // the ROUTER identity of the client that reset it (sessions.max_episodes_per_client)
  double episode_reward = 0, final_reward = 0;
  bool terminated = false, truncated = false;
  std::string gpu_name;
};

// Appends finished trajectories to the trajectory file on its own thread (an fsync must not stall
// the front). After each attempt `outcome` runs on the front thread with "" (committed) or why it
// failed; a trajectory that failed is kept and retried every second, and at stop(); one still
// failing then is written to a side file (FILE.h5.unwritten-PID-N.msgpack) and named on stderr.
class Recorder {
 public:
  using Outcome = std::function<void(const std::string& error)>;
  Recorder(std::unique_ptr<TrajectoryFile> file, Inbox& inbox) : file_(std::move(file)), inbox_(inbox) {
    path_ = file_->path();
    notes_ = file_->notes();
    thread_ = std::thread([this] { loop(); });
  }
  ~Recorder() { stop(); }
  void add(std::vector<uint8_t> bytes, TrajectorySummary summary, Outcome outcome) {
    {
      std::lock_guard<std::mutex> lock(m_);
      q_.push_back({std::move(bytes), std::move(summary), std::move(outcome)});
    }
    cv_.notify_one();
  }
  // Writes everything queued, retries what failed once more, then ends the thread.
  void stop();
  uint64_t written() const { return written_; }
  uint64_t failed() const { return failed_; }        // failed attempts
  uint64_t unwritten() const { return unwritten_; }  // trajectories held in memory for a retry
  uint64_t behind() const { return behind_; }        // committed, not yet in the HDF5 file
  const std::string& path() const { return path_; }
  const std::vector<std::string>& notes() const { return notes_; }  // what opening the file found

 private:
  struct Item {
    std::vector<uint8_t> bytes;
    TrajectorySummary summary;
    Outcome outcome;
  };
  void loop();
  // One append; `error` says why it failed. The outcome is posted by answer(), after the counts
  // (unwritten) say where the trajectory is: a client told of a failure finds it counted in health.
  bool write(Item& item, std::string& error);
  void answer(const Outcome& outcome, const std::string& error);
  void write_side_file(const Item& item);
  std::unique_ptr<TrajectoryFile> file_;
  Inbox& inbox_;
  std::string path_;
  std::vector<std::string> notes_;
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<Item> q_;
  std::deque<Item> retry_;  // the recorder thread's only
  bool stopped_ = false;
  std::atomic<uint64_t> written_{0}, failed_{0}, unwritten_{0}, behind_{0};
  std::thread thread_;
};

struct RolloutServer::Impl {
  using Kind = ProtocolErrorKind;
  // Helpers of both files.
  static double unix_now();
  static ProtocolError error(Kind kind, std::string message, std::string field = "");
  ServerConfig config;
  ServerSetup setup;
  zmq::context_t ctx{1};
  zmq::socket_t router{ctx, zmq::socket_type::router};
  std::unique_ptr<zmq::socket_t> push;
  std::string endpoint, stream_endpoint;
  TaskCatalog catalog;
  Json baselines_overlay;            // what tasks.baselines gave (overlay_own_baselines), null without it
  std::unique_ptr<LaneJudge> judge;  // the front thread's (no evaluator): front-lane steps and new episodes
  Inbox inbox;
  std::unique_ptr<Recorder> recorder;

  // Lanes.
  std::vector<std::unique_ptr<Evaluator>> compile_evaluators, gpu_evaluators;
  std::unique_ptr<WorkQueue> compile_queue;
  std::vector<std::unique_ptr<WorkQueue>> gpu_queues;
  std::vector<std::thread> threads;
  struct GpuState {
    std::atomic<int> worker_starts{0};
    std::mutex m;
    // The device's name (from the set-up, then as its worker named it) and its compile target
    // (sm_90a; "" until its worker said hello).
    struct Device {
      std::string name, arch;
    } device_;
    void set_device(Device d) {
      std::lock_guard<std::mutex> lock(m);
      device_ = std::move(d);
    }
    Device device() {
      std::lock_guard<std::mutex> lock(m);
      return device_;
    }
    int sessions = 0;  // open episodes assigned to it (front thread)
  };
  std::vector<std::unique_ptr<GpuState>> gpu_state;

  // Front-thread state.
  std::unordered_map<std::string, std::shared_ptr<Session>> sessions;
  std::unordered_map<std::string, int> client_episodes;  // open episodes per client identity
  void forget(const Session& s);                         // a session leaves `sessions`: its client holds one fewer
  std::mt19937_64 rng{std::random_device{}()};
  uint64_t next_job = 1;
  int in_flight = 0;                            // steps queued or running on a lane
  uint64_t warm_compiles_queued = 0;            // scheduler.warm_compiles: pushed (front thread)
  std::atomic<uint64_t> warm_compiles_done{0};  // and built (compile threads)
  bool shutting_down = false;
  Clock::time_point shutdown_deadline;
  Clock::time_point started = Clock::now();
  Clock::time_point last_reap = Clock::now();
  std::deque<std::vector<uint8_t>> backlog;  // trajectories not yet taken by a puller
  uint64_t streamed = 0, stream_dropped = 0, trajectories = 0, requests = 0;

  Impl(ServerConfig c, ServerSetup s) : config(std::move(c)), setup(std::move(s)) {}
  ~Impl() {
    if (!private_cache_dir.empty()) remove_flat_dir(private_cache_dir);
  }
  static void remove_flat_dir(const std::string& dir) {  // one file per compile result, no subfolders
    std::error_code ec;
    for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) std::filesystem::remove(it->path(), ec);
    std::filesystem::remove(dir, ec);
  }
  // Caches of servers that were killed (SIGKILL skips the destructor): kforge-serve-cache-PID-*
  // whose PID no longer runs.
  static void remove_dead_servers_caches(const std::string& root);
  std::string private_cache_dir;  // the compile cache made for this server ("" if configured)

  // ---- set-up ------------------------------------------------------------------------------
  void start();

  void lane_loop(WorkQueue& queue, Evaluator* compile_ev, Evaluator* gpu_ev, int gpu);

  static void run_step(StepJob& job, CandidateJudge& judge);

  void stop_lanes();

  // ---- replies -----------------------------------------------------------------------------
  void send(std::vector<zmq::message_t> frames);
  void reply(const Envelope& to, const Json& data) { send(encode_reply(to, data)); }
  void reply_error(const Envelope& to, const ProtocolError& e) { send(encode_error(to, e)); }

  ProtocolError busy(std::string message, double retry_after);

  // ---- requests ----------------------------------------------------------------------------
  void handle(const Envelope& to, const Request& req);

  Json health();
  Json baselines_health() const;
  // The GPU models of the lanes judging here.
  std::set<std::string> judging_models() const;
  // tasks.baselines: the key folder of the GPU model judging here, overlaid on the catalog.
  void overlay_own_baselines();

  std::shared_ptr<Session> find(const std::string& id);

  ProtocolError unknown_episode(const std::string& id);

  void reset(const Envelope& to, const ResetParams& p);

  void step(const Envelope& to, const StepParams& p);
  // scheduler.warm_compiles: queues the candidate of a GPU step `parsed` of `s` for a compile thread.
  void warm_compile(const Session& s, const ParsedAction& parsed);

  // A step finished (on the front thread: inline, or posted by its lane).
  void step_done(const StepJobPtr& job);

  // Hands the episode's trajectory to the stream and the recorder, once; `then` runs once, when
  // the first attempt to record it is over, with "" or why it failed (at once without a recorder).
  void finalize(const std::shared_ptr<Session>& sp, const std::string& cause, Recorder::Outcome then = nullptr);
  // The reply to a step or close that ended an episode whose trajectory is not on disk.
  ProtocolError record_failed(const std::string& why, const std::string& episode);

  void flush_stream();

  void close(const Envelope& to, const std::string& id);

  // Takes the session's queued step out of its queue and answers it `cancelled`; false when it is running.
  bool cancel_queued(const std::shared_ptr<Session>& s, const char* why = "cancelled before it ran");

  void cancel(const Envelope& to, const std::string& id);

  void reap();

  // ---- the loop ----------------------------------------------------------------------------
  void receive_some();

  void begin_shutdown();

  void loop(const std::atomic<bool>& stop);

  void finish_shutdown();
};

}  // namespace kforge
