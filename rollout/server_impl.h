#pragma once
// The rollout server's inside (server.h's RolloutServer::Impl): its state, the open episodes and
// the trajectory recorder. server.cpp holds set-up, lanes, the front loop and shutdown;
// server_episodes.cpp the episode requests (reset, step, close, cancel).

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <thread>
#include <unordered_map>
#include <vector>

#include <unistd.h>

#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "configs/error.h"
#include "env/process/clock.h"
#include "env/judge/evaluator.h"
#include "env/episode/tool_call.h"
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
  StepJobPtr pending;       // the step queued or running, if any
  bool ended = false;       // terminated or truncated
  bool closed = false;      // closed by the client while a step ran
  bool recorded = false;    // its trajectory was handed to the stream and the recorder
  double episode_reward = 0, final_reward = 0;
  bool terminated = false, truncated = false;
  std::string gpu_name;
};

// Appends finished trajectories to the HDF5 file on its own thread (an fsync must not stall the
// front); `then` runs on the front thread once the trajectory is on disk.
class Recorder {
 public:
  Recorder(std::unique_ptr<TrajectoryFile> file, Inbox& inbox) : file_(std::move(file)), inbox_(inbox) {
    thread_ = std::thread([this] { loop(); });
  }
  ~Recorder() { stop(); }
  void add(std::vector<uint8_t> bytes, TrajectorySummary summary, std::function<void()> then) {
    {
      std::lock_guard<std::mutex> lock(m_);
      q_.push_back({std::move(bytes), std::move(summary), std::move(then)});
    }
    cv_.notify_one();
  }
  // Writes everything queued, then ends the thread.
  void stop() {
    {
      std::lock_guard<std::mutex> lock(m_);
      if (stopped_) return;
      stopped_ = true;
    }
    cv_.notify_one();
    thread_.join();
    file_.reset();
  }
  uint64_t written() const { return written_; }
  uint64_t failed() const { return failed_; }
  const std::string& path() const { return path_; }

 private:
  struct Item {
    std::vector<uint8_t> bytes;
    TrajectorySummary summary;
    std::function<void()> then;
  };
  void loop() {
    path_ = file_->path();
    for (;;) {
      Item item;
      {
        std::unique_lock<std::mutex> lock(m_);
        cv_.wait(lock, [this] { return stopped_ || !q_.empty(); });
        if (q_.empty()) return;
        item = std::move(q_.front());
        q_.pop_front();
      }
      try {
        file_->append_msgpack(item.bytes, item.summary);
        ++written_;
      } catch (const std::exception& e) {
        ++failed_;
        std::cerr << "kforge serve: recording episode " << item.summary.episode << " failed: " << e.what() << std::endl;
      }
      if (item.then) inbox_.post(std::move(item.then));
    }
  }
  std::unique_ptr<TrajectoryFile> file_;
  Inbox& inbox_;
  std::string path_;
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<Item> q_;
  bool stopped_ = false;
  std::atomic<uint64_t> written_{0}, failed_{0};
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
    std::string name_;  // the device's name, once its worker said hello
    void set_name(std::string n) {
      std::lock_guard<std::mutex> lock(m);
      name_ = std::move(n);
    }
    std::string name() {
      std::lock_guard<std::mutex> lock(m);
      return name_;
    }
    int sessions = 0;  // open episodes assigned to it (front thread)
  };
  std::vector<std::unique_ptr<GpuState>> gpu_state;

  // Front-thread state.
  std::unordered_map<std::string, std::shared_ptr<Session>> sessions;
  std::mt19937_64 rng{std::random_device{}()};
  uint64_t next_job = 1;
  int in_flight = 0;  // steps queued or running on a lane
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
    for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
      std::filesystem::remove(it->path(), ec);
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

  std::shared_ptr<Session> find(const std::string& id);

  ProtocolError unknown_episode(const std::string& id);

  void reset(const Envelope& to, const ResetParams& p);

  void step(const Envelope& to, const StepParams& p);

  // A step finished (on the front thread: inline, or posted by its lane).
  void step_done(const StepJobPtr& job);

  // Hands the episode's trajectory to the stream and the recorder, once; `then` runs once it is
  // recorded (at once without a recorder).
  void finalize(const std::shared_ptr<Session>& sp, const std::string& cause, std::function<void()> then = nullptr);

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
