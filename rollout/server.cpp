#include "rollout/server.h"

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
#include "env/judge/evaluator.h"
#include "env/episode/tool_call.h"
#include "rollout/lanes.h"
#include "rollout/task_catalog.h"
#include "rollout/trajectory_file.h"

#ifndef KFORGE_VERSION
#define KFORGE_VERSION "unknown"
#endif

namespace kforge {

const char* kforge_version() { return KFORGE_VERSION; }

namespace {

using Kind = ProtocolErrorKind;

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}
double ms_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }

ProtocolError error(Kind kind, std::string message, std::string field = "") {
  ProtocolError e;
  e.kind = kind;
  e.message = std::move(message);
  e.field = std::move(field);
  return e;
}

// Episode ids: 16 random bytes in hex, never reused within a process (a client holding a stale id
// gets unknown_episode, not someone else's episode).
std::string new_episode_id(std::mt19937_64& rng) {
  static const char* hex = "0123456789abcdef";
  std::string id = "ep-";
  for (int i = 0; i < 2; ++i) {
    uint64_t x = rng();
    for (int k = 0; k < 16; ++k) id += hex[(x >> (4 * k)) & 15];
  }
  return id;
}

// Binds `socket` to `endpoint`, or an io error that says what to do about it.
void bind_or_fail(zmq::socket_t& socket, const std::string& endpoint, const char* what) {
  try {
    socket.bind(endpoint);
  } catch (const zmq::error_t& e) {
    const int n = e.num();
    std::string hint = n == EADDRINUSE ? "another process (another kforge serve?) holds it; --bind picks another port"
                       : n == ENOENT   ? "the folder of the ipc path does not exist"
                       : n == ENODEV || n == EADDRNOTAVAIL ? "this machine has no such interface or address"
                                                           : "endpoints look like tcp://HOST:PORT (HOST an address or *, PORT "
                                                             "a number or *) or ipc://PATH";
    KFORGE_FAIL(io, "cannot bind " << what << " to '" << endpoint << "': " << e.what() << " (" << hint << ")");
  }
}

}  // namespace

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

ServerSetup ServerSetup::load(const ServerConfig& c) {
  c.check_paths();
  ServerSetup s;
  if (!c.env_config.empty()) s.env = EnvConfig::load(c.env_config);
  if (!c.reward_config.empty()) s.reward = RewardConfig::load(c.reward_config);
  if (!c.eval_config.empty()) s.eval = EvalConfig::load(c.eval_config);
  if (!c.anticheat_config.empty()) s.anticheat = AnticheatConfig::load(c.anticheat_config);
  GpuLanes lanes = detect_gpu_lanes(c.scheduler.gpus);
  s.gpus = lanes.count;
  s.gpu_names = std::move(lanes.names);
  s.gpu_summary = std::move(lanes.summary);
  return s;
}

struct RolloutServer::Impl {
  ServerConfig config;
  ServerSetup setup;
  zmq::context_t ctx{1};
  zmq::socket_t router{ctx, zmq::socket_type::router};
  std::unique_ptr<zmq::socket_t> push;
  std::string endpoint, stream_endpoint;
  TaskCatalog catalog;
  std::unique_ptr<LaneJudge> judge;
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
  static void remove_dead_servers_caches(const std::string& root) {
    const std::string prefix = "kforge-serve-cache-";
    std::error_code ec;
    for (std::filesystem::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
      std::string name = it->path().filename().string();
      if (name.rfind(prefix, 0) != 0) continue;
      std::string rest = name.substr(prefix.size());
      size_t dash = rest.find('-');
      if (dash == std::string::npos || dash == 0 || rest.find_first_not_of("0123456789") != dash) continue;
      if (std::filesystem::exists("/proc/" + rest.substr(0, dash))) continue;
      remove_flat_dir(it->path().string());
    }
  }
  std::string private_cache_dir;  // the compile cache made for this server ("" if configured)

  // ---- set-up ------------------------------------------------------------------------------
  void start() {
    if (config.tasks.samples) catalog.add_spec_dir(resource_path("datasets/samples"));
    for (const auto& d : config.tasks.dirs) catalog.add_spec_dir(d);
    for (const auto& d : config.tasks.datasets) catalog.add_dataset(d, config.tasks.serve_unmeasured);

    // The policy must never know its inputs: a salt of 0 (reproducible draws for tools) is
    // replaced by a random one for this server's life.
    if (setup.eval.draws.salt == 0) setup.eval.draws.salt = rng() | 1;
    // One compile cache on disk for every compile worker of this server (the compile pool's and
    // the GPU lanes'): a source compile() already built is not compiled again while a GPU waits.
    if (setup.eval.worker.compile_cache_dir.empty()) {
      const char* tmp = std::getenv("TMPDIR");
      const std::string root = tmp && *tmp ? tmp : "/tmp";
      remove_dead_servers_caches(root);
      std::string templ = root + "/kforge-serve-cache-" + std::to_string(::getpid()) + "-XXXXXX";
      std::vector<char> buf(templ.begin(), templ.end());
      buf.push_back('\0');
      if (mkdtemp(buf.data())) {
        private_cache_dir = buf.data();
        setup.eval.worker.compile_cache_dir = private_cache_dir;
      }
    }
    judge = std::make_unique<LaneJudge>(setup.eval, setup.gpus > 0);

    router.set(zmq::sockopt::linger, 0);
    router.set(zmq::sockopt::sndhwm, 100000);
    router.set(zmq::sockopt::rcvhwm, 100000);
    // A memory guard far above the protocol's limit: frames that big are dropped by libzmq with
    // the connection; everything up to it gets a payload_too_large reply (PROTOCOL.md, Limits).
    router.set(zmq::sockopt::maxmsgsize, std::min<int64_t>(config.protocol.max_payload_bytes * 4 + 4096, int64_t{1} << 31));
    bind_or_fail(router, config.bind, "the server socket");
    endpoint = router.get(zmq::sockopt::last_endpoint);
    if (!config.stream.bind.empty()) {
      push = std::make_unique<zmq::socket_t>(ctx, zmq::socket_type::push);
      push->set(zmq::sockopt::sndhwm, 1000);
      push->set(zmq::sockopt::linger, 5000);
      bind_or_fail(*push, config.stream.bind, "the trajectory stream (stream.bind)");
      stream_endpoint = push->get(zmq::sockopt::last_endpoint);
    }
    if (!config.record.path.empty())
      recorder = std::make_unique<Recorder>(std::make_unique<TrajectoryFile>(config.record.path, config.record.fsync), inbox);

    const int nc = config.scheduler.compile_workers;
    compile_queue = std::make_unique<WorkQueue>(static_cast<size_t>(config.scheduler.max_compile_queue));
    for (int i = 0; i < nc; ++i) {
      compile_evaluators.push_back(std::make_unique<Evaluator>(setup.eval, 0));
      compile_evaluators.back()->set_anticheat(setup.anticheat);
    }
    for (int g = 0; g < setup.gpus; ++g) {
      gpu_evaluators.push_back(std::make_unique<Evaluator>(setup.eval, g));
      gpu_evaluators.back()->set_anticheat(setup.anticheat);
      gpu_queues.push_back(std::make_unique<WorkQueue>(static_cast<size_t>(config.scheduler.max_gpu_queue)));
      gpu_state.push_back(std::make_unique<GpuState>());
      if (g < static_cast<int>(setup.gpu_names.size())) gpu_state.back()->set_name(setup.gpu_names[g]);
    }
    for (int i = 0; i < nc; ++i) {
      Evaluator* ev = compile_evaluators[i].get();
      threads.emplace_back([this, ev] { lane_loop(*compile_queue, ev, nullptr, -1); });
    }
    for (int g = 0; g < setup.gpus; ++g) {
      Evaluator* ev = gpu_evaluators[g].get();
      threads.emplace_back([this, ev, g] {
        // Start the GPU worker before taking work: its CUDA context and warm-up are not a step's time.
        try {
          Json device = ev->gpu_worker().hello().value("device", Json());
          gpu_state[g]->set_name(device.is_object() ? device.value("name", std::string()) : "");
        } catch (const std::exception& e) {
          std::cerr << "kforge serve: GPU " << g << ": the worker did not start (" << e.what()
                    << "); its steps will report the error" << std::endl;
        }
        gpu_state[g]->worker_starts = ev->gpu_worker().starts();
        lane_loop(*gpu_queues[g], ev, ev, g);
      });
    }
  }

  void lane_loop(WorkQueue& queue, Evaluator* compile_ev, Evaluator* gpu_ev, int gpu) {
    LaneJudge::Binding binding(compile_ev, gpu_ev);
    while (StepJobPtr job = queue.pop()) {
      run_step(*job);
      queue.finished(ms_between(job->started, job->finished) / 1000.0);
      if (gpu >= 0) gpu_state[gpu]->worker_starts = gpu_ev->gpu_worker().starts();
      inbox.post([this, job] { step_done(job); });
    }
  }

  static void run_step(StepJob& job) {
    job.started = Clock::now();
    try {
      job.result = job.session->env.step(job.action);
    } catch (const std::exception& e) {
      job.failure = e.what();
    }
    job.finished = Clock::now();
    job.state = StepJob::done;
  }

  void stop_lanes() {
    if (compile_queue) compile_queue->stop();
    for (auto& q : gpu_queues) q->stop();
    for (auto& t : threads) t.join();
    threads.clear();
  }

  // ---- replies -----------------------------------------------------------------------------
  void send(std::vector<zmq::message_t> frames) {
    // A reply to a client that is gone is dropped by the ROUTER: nothing to do about it.
    try {
      zmq::send_multipart(router, frames, zmq::send_flags::dontwait);
    } catch (const zmq::error_t& e) {
      std::cerr << "kforge serve: a reply could not be sent: " << e.what() << std::endl;
    }
  }
  void reply(const Envelope& to, const Json& data) { send(encode_reply(to, data)); }
  void reply_error(const Envelope& to, const ProtocolError& e) { send(encode_error(to, e)); }

  ProtocolError busy(std::string message, double retry_after) {
    ProtocolError e = error(Kind::busy, std::move(message));
    e.retry_after = std::max(retry_after, config.scheduler.min_retry_after_s);
    return e;
  }

  // ---- requests ----------------------------------------------------------------------------
  void handle(const Envelope& to, const Request& req) {
    switch (req.method) {
      case Method::health: return reply(to, health());
      case Method::tools: return reply(to, {{"tools", tool_schemas()}});
      case Method::tasks: return reply(to, catalog.list(std::get<TasksParams>(req.params)));
      case Method::reset: return reset(to, std::get<ResetParams>(req.params));
      case Method::step: return step(to, std::get<StepParams>(req.params));
      case Method::close: return close(to, std::get<CloseParams>(req.params).episode);
      case Method::cancel: return cancel(to, std::get<CancelParams>(req.params).episode);
    }
  }

  Json health() {
    Json gpus = Json::array();
    for (int g = 0; g < setup.gpus; ++g) {
      gpus.push_back({{"index", g}, {"name", gpu_state[g]->name()}, {"queued", gpu_queues[g]->queued()},
                      {"running", gpu_queues[g]->running()}, {"done", gpu_queues[g]->done()},
                      {"episodes", gpu_state[g]->sessions}, {"worker_starts", gpu_state[g]->worker_starts.load()}});
    }
    Json stream = Json();
    if (push) stream = {{"endpoint", stream_endpoint}, {"sent", streamed}, {"backlog", backlog.size()}, {"dropped", stream_dropped}};
    Json record = Json();
    if (recorder) record = {{"path", recorder->path()}, {"written", recorder->written()}, {"failed", recorder->failed()}};
    return {{"status", shutting_down ? "shutting_down" : "ok"},
            {"version", kforge_version()},
            {"protocol", kProtocolVersion},
            {"uptime_s", std::chrono::duration<double>(Clock::now() - started).count()},
            {"episodes", {{"open", sessions.size()}, {"max", config.sessions.max_episodes}, {"steps_in_flight", in_flight},
                          {"idle_timeout_s", config.sessions.idle_timeout_s}}},
            {"compile", {{"workers", config.scheduler.compile_workers}, {"queued", compile_queue->queued()},
                         {"running", compile_queue->running()}, {"done", compile_queue->done()}}},
            {"gpus", gpus},
            {"tasks", catalog.size()},
            {"trajectories", trajectories},
            {"requests", requests},
            {"stream", stream},
            {"record", record}};
  }

  std::shared_ptr<Session> find(const std::string& id) {
    auto it = sessions.find(id);
    return it == sessions.end() ? nullptr : it->second;
  }

  ProtocolError unknown_episode(const std::string& id) {
    return error(Kind::unknown_episode,
                 "no open episode '" + id + "' (never opened, already closed, or reaped after " +
                     std::to_string(static_cast<int>(config.sessions.idle_timeout_s)) + " s idle)",
                 "episode");
  }

  void reset(const Envelope& to, const ResetParams& p) {
    if (shutting_down) return reply_error(to, error(Kind::shutting_down, "the server is shutting down; it takes no new episodes"));
    if (static_cast<int>(sessions.size()) >= config.sessions.max_episodes)
      return reply_error(to, busy(std::to_string(sessions.size()) + " episodes are open (sessions.max_episodes); close one or retry later",
                                  1.0));
    std::shared_ptr<const TaskSpec> task;
    try {
      task = catalog.find(p.task);
    } catch (const Error& e) {
      return reply_error(to, error(Kind::internal, "task '" + p.task + "' cannot be loaded: " + e.what()));
    }
    if (!task)
      return reply_error(to, error(Kind::unknown_task, "no task '" + p.task + "' is served here (the tasks method lists them)", "task"));
    auto s = std::make_shared<Session>(new_episode_id(rng), setup.env, setup.reward, *judge);
    s->task = task;
    s->seed = p.seed.value_or(rng());
    s->options = p.options;
    ResetResult r;
    try {
      r = s->env.reset(*task, s->seed, p.options);
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::usage) return reply_error(to, error(Kind::bad_params, e.what(), "options"));
      return reply_error(to, error(Kind::internal, std::string("reset failed: ") + e.what()));
    }
    if (setup.gpus > 0) {
      int best = 0;
      for (int g = 1; g < setup.gpus; ++g)
        if (gpu_state[g]->sessions < gpu_state[best]->sessions) best = g;
      s->gpu = best;
      ++gpu_state[best]->sessions;
    }
    s->started_unix = unix_now();
    s->started = s->last_activity = Clock::now();
    r.info["episode"] = s->id;
    r.info["gpu"] = s->gpu >= 0 ? Json(s->gpu) : Json();
    Json recorded_info = r.info;
    recorded_info.erase("tools");  // the same for every episode; the tools method gives them
    s->reset_record = {{"observation", r.observation}, {"info", recorded_info}};
    sessions.emplace(s->id, s);
    reply(to, {{"episode", s->id}, {"observation", std::move(r.observation)}, {"info", std::move(r.info)}});
  }

  void step(const Envelope& to, const StepParams& p) {
    auto s = find(p.episode);
    if (!s) return reply_error(to, unknown_episode(p.episode));
    s->last_activity = Clock::now();
    if (shutting_down) return reply_error(to, error(Kind::shutting_down, "the server is shutting down; no more steps are taken"));
    if (s->ended)
      return reply_error(to, error(Kind::episode_over, "episode '" + p.episode + "' is over (" + s->env.termination_reason() +
                                                           "); close it and reset another", "episode"));
    if (s->pending)
      return reply_error(to, error(Kind::episode_busy, "episode '" + p.episode + "' has a step " +
                                                           (s->pending->state == StepJob::queued ? "queued" : "running") +
                                                           "; wait for its reply (or cancel it)", "episode"));
    auto job = std::make_shared<StepJob>();
    job->id = next_job++;
    job->session = s;
    job->to = to;
    job->action = p.action;
    job->received = Clock::now();
    job->lane = lane_for_action(p.action);
    // Without GPUs a GPU tool is answered at once: the judge says there is no GPU.
    if (job->lane == Lane::gpu && setup.gpus == 0) job->lane = Lane::front;
    if (job->lane == Lane::front) {
      job->state = StepJob::running;
      run_step(*job);
      step_done(job);
      return;
    }
    WorkQueue* q = compile_queue.get();
    int threads = config.scheduler.compile_workers;
    if (job->lane == Lane::gpu) {
      job->gpu = s->gpu;
      q = gpu_queues[s->gpu].get();
      threads = 1;
    }
    if (!q->push(job)) {
      std::string where = job->lane == Lane::gpu ? "GPU " + std::to_string(s->gpu) : std::string("compile");
      return reply_error(to, busy("the " + where + " queue is full (" + std::to_string(q->queued()) + " steps waiting)",
                                  q->retry_after(threads, config.scheduler.min_retry_after_s)));
    }
    s->pending = job;
    ++in_flight;
  }

  // A step finished (on the front thread: inline, or posted by its lane).
  void step_done(const StepJobPtr& job) {
    Session& s = *job->session;
    if (job->lane != Lane::front) --in_flight;
    s.pending = nullptr;
    s.last_activity = Clock::now();
    if (!job->result) {
      reply_error(job->to, error(Kind::internal, "the step failed inside the server: " + job->failure));
      if (s.closed) finalize(job->session, "closed");
      return;
    }
    StepResult& r = *job->result;
    Json timings = {{"lane", lane_name(job->lane)},
                    {"queued_ms", ms_between(job->received, job->started)},
                    {"run_ms", ms_between(job->started, job->finished)},
                    {"total_ms", ms_between(job->received, Clock::now())}};
    if (job->gpu >= 0) timings["gpu"] = job->gpu;
    if (job->gpu >= 0 && r.info.contains("report") && r.info["report"].is_object() && r.info["report"].contains("device") &&
        r.info["report"]["device"].is_object())
      s.gpu_name = r.info["report"]["device"].value("name", s.gpu_name);
    s.turns.push_back({{"turn", s.env.turn()}, {"action", job->action}, {"observation", r.observation}, {"reward", r.reward},
                       {"terminated", r.terminated}, {"truncated", r.truncated}, {"info", r.info}, {"timings", timings}});
    s.final_reward = r.reward;
    s.terminated = r.terminated;
    s.truncated = r.truncated;
    if (r.info.contains("episode_reward") && r.info["episode_reward"].is_number()) s.episode_reward = r.info["episode_reward"].get<double>();
    Json payload = {{"episode", s.id},          {"observation", std::move(r.observation)}, {"reward", r.reward},
                    {"terminated", r.terminated}, {"truncated", r.truncated},               {"info", std::move(r.info)},
                    {"timings", timings}};
    bool ended = r.terminated || r.truncated;
    if (ended) s.ended = true;
    if (ended || s.closed) {
      // The reply that ends an episode goes out once its trajectory is on disk: a client that saw
      // the end of an episode can count on its record surviving a crash.
      Envelope to = job->to;
      auto data = std::make_shared<Json>(std::move(payload));
      finalize(job->session, ended ? "finished" : "closed", [this, to, data] { reply(to, *data); });
      return;
    }
    reply(job->to, payload);
  }

  // Hands the episode's trajectory to the stream and the recorder, once; `then` runs once it is
  // recorded (at once without a recorder).
  void finalize(const std::shared_ptr<Session>& sp, const std::string& cause, std::function<void()> then = nullptr) {
    Session& s = *sp;
    if (s.recorded) {
      if (then) then();
      return;
    }
    s.recorded = true;
    if (s.gpu >= 0) --gpu_state[s.gpu]->sessions;
    double now = unix_now();
    Json t = {{"schema", "kforge.trajectory/1"},
              {"episode", s.id},
              {"task", s.task->id},
              {"task_source", task_source_name(s.task->source)},
              {"task_split", split_name(s.task->split)},
              {"seed", s.seed},
              {"options", s.options},
              {"gpu", s.gpu},
              {"gpu_name", s.gpu_name},
              {"kforge_version", kforge_version()},
              {"protocol_version", kProtocolVersion},
              {"started_unix", s.started_unix},
              {"ended_unix", now},
              {"duration_s", now - s.started_unix},
              {"end_cause", cause},
              {"termination_reason", s.env.termination_reason().empty() ? Json() : Json(s.env.termination_reason())},
              {"terminated", s.terminated},
              {"truncated", s.truncated},
              {"episode_reward", s.episode_reward},
              {"final_reward", s.final_reward},
              {"reset", std::move(s.reset_record)},
              {"turns", std::move(s.turns)}};
    s.turns = Json::array();
    ++trajectories;
    std::vector<uint8_t> bytes = Json::to_msgpack(t);
    if (push) {
      if (static_cast<int>(backlog.size()) >= config.stream.max_backlog) {
        backlog.pop_front();
        ++stream_dropped;
      }
      backlog.push_back(bytes);
      flush_stream();
    }
    if (recorder) {
      recorder->add(std::move(bytes), TrajectorySummary::of(t), std::move(then));
    } else if (then) {
      then();
    }
  }

  void flush_stream() {
    while (push && !backlog.empty()) {
      const auto& b = backlog.front();
      auto sent = push->send(zmq::buffer(b.data(), b.size()), zmq::send_flags::dontwait);
      if (!sent) return;  // no puller connected, or it is behind: keep it for later
      backlog.pop_front();
      ++streamed;
    }
  }

  void close(const Envelope& to, const std::string& id) {
    auto s = find(id);
    if (!s) return reply_error(to, unknown_episode(id));
    sessions.erase(id);
    bool step_running = false;
    if (s->pending) {
      if (!cancel_queued(s)) {
        step_running = true;
        s->closed = true;  // recorded when the running step comes back
      }
    }
    Json data = {{"episode", id}, {"closed", true}, {"step_running", step_running}};
    if (step_running) return reply(to, data);
    // Like the step that ends an episode, the close reply waits for the trajectory to be on disk.
    finalize(s, s->ended ? "finished" : "closed", [this, to, data] { reply(to, data); });
  }

  // Takes the session's queued step out of its queue and answers it `cancelled`; false when it is running.
  bool cancel_queued(const std::shared_ptr<Session>& s, const char* why = "cancelled before it ran") {
    StepJobPtr job = s->pending;
    if (!job) return false;
    WorkQueue* q = job->lane == Lane::gpu ? gpu_queues[job->gpu].get() : compile_queue.get();
    if (!q->remove(job)) return false;
    s->pending = nullptr;
    --in_flight;
    reply_error(job->to, error(Kind::cancelled, std::string("the step was ") + why + "; the episode is unchanged"));
    return true;
  }

  void cancel(const Envelope& to, const std::string& id) {
    auto s = find(id);
    if (!s) return reply_error(to, unknown_episode(id));
    s->last_activity = Clock::now();
    if (!s->pending) return reply(to, {{"episode", id}, {"cancelled", false}, {"state", "idle"}});
    if (cancel_queued(s)) return reply(to, {{"episode", id}, {"cancelled", true}, {"state", "queued"}});
    reply(to, {{"episode", id}, {"cancelled", false}, {"state", "running"},
               {"message", "the step is running on its worker and will reply when done"}});
  }

  void reap() {
    auto now = Clock::now();
    auto idle = std::chrono::duration<double>(config.sessions.idle_timeout_s);
    for (auto it = sessions.begin(); it != sessions.end();) {
      auto& s = it->second;
      if (!s->pending && now - s->last_activity > idle) {
        finalize(s, s->ended ? "finished" : "idle_timeout");
        it = sessions.erase(it);
      } else {
        ++it;
      }
    }
  }

  // ---- the loop ----------------------------------------------------------------------------
  void receive_some() {
    for (int n = 0; n < 1000; ++n) {
      std::vector<zmq::message_t> frames;
      std::optional<size_t> got;
      try {
        got = zmq::recv_multipart(router, std::back_inserter(frames), zmq::recv_flags::dontwait);
      } catch (const zmq::error_t& e) {
        if (e.num() == EINTR) return;
        throw;
      }
      if (!got) return;
      ++requests;
      DecodeResult r = decode_request(frames, config.protocol);
      if (!r.envelope.answerable()) continue;
      if (!r.ok()) {
        reply_error(r.envelope, r.error());
        continue;
      }
      try {
        handle(r.envelope, r.request());
      } catch (const std::exception& e) {
        reply_error(r.envelope, error(Kind::internal, std::string("the server failed on this request: ") + e.what()));
      }
    }
  }

  void begin_shutdown() {
    shutting_down = true;
    shutdown_deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(config.shutdown.grace_s));
    std::deque<StepJobPtr> queued = compile_queue->drain();
    for (auto& q : gpu_queues)
      for (auto& j : q->drain()) queued.push_back(j);
    for (auto& job : queued) {
      job->session->pending = nullptr;
      --in_flight;
      reply_error(job->to, error(Kind::cancelled, "the server is shutting down; the queued step was not run"));
    }
  }

  void loop(const std::atomic<bool>& stop) {
    zmq::pollitem_t items[] = {{router.handle(), 0, ZMQ_POLLIN, 0}, {nullptr, inbox.fd(), ZMQ_POLLIN, 0}};
    for (;;) {
      if (stop && !shutting_down) begin_shutdown();
      if (shutting_down && (in_flight == 0 || Clock::now() > shutdown_deadline)) return;
      try {
        zmq::poll(items, 2, std::chrono::milliseconds(50));
      } catch (const zmq::error_t& e) {
        if (e.num() != EINTR) throw;
      }
      inbox.run_all();
      receive_some();
      flush_stream();
      auto reap_every = std::chrono::duration<double>(std::min(1.0, config.sessions.idle_timeout_s / 4));
      if (Clock::now() - last_reap > reap_every) {
        reap();
        last_reap = Clock::now();
      }
    }
  }

  void finish_shutdown() {
    // Steps still running past the grace period: their worker processes are killed, which ends
    // the request at once (worker_crashed) so the lane threads can be joined.
    if (in_flight > 0) {
      for (auto& ev : gpu_evaluators)
        if (ev->gpu_worker().pid() > 0) ::kill(ev->gpu_worker().pid(), SIGKILL);
      for (auto& ev : compile_evaluators)
        if (ev->compile_worker().pid() > 0) ::kill(ev->compile_worker().pid(), SIGKILL);
    }
    stop_lanes();
    inbox.run_all();  // replies of steps that ended while stopping
    for (auto& [id, s] : sessions) finalize(s, s->ended ? "finished" : "shutdown");
    sessions.clear();
    if (recorder) recorder->stop();
    inbox.run_all();  // replies waiting for their trajectory to be recorded
    flush_stream();
  }
};

RolloutServer::RolloutServer(ServerConfig config, ServerSetup setup)
    : impl_(std::make_unique<Impl>(std::move(config), std::move(setup))) {
  impl_->start();
}

RolloutServer::~RolloutServer() {
  impl_->stop_lanes();
  if (impl_->recorder) impl_->recorder->stop();
}

void RolloutServer::run(const std::atomic<bool>& stop) {
  impl_->loop(stop);
  impl_->finish_shutdown();
}

const std::string& RolloutServer::endpoint() const { return impl_->endpoint; }
const std::string& RolloutServer::stream_endpoint() const { return impl_->stream_endpoint; }

std::string RolloutServer::describe() const {
  std::ostringstream os;
  os << impl_->endpoint << " (" << impl_->catalog.size() << " tasks";
  if (impl_->catalog.unmeasured() > 0)
    os << ", " << impl_->catalog.unmeasured() << " of them not yet measured on a GPU (no baselines; a GPU stage may still reject them)";
  if (impl_->catalog.unmeasured_left_out() > 0)
    os << "; " << impl_->catalog.unmeasured_left_out() << " dataset rows not yet measured on a GPU left out (tasks.serve_unmeasured)";
  const ServerSetup& setup = impl_->setup;
  os << "; " << (setup.gpu_summary.empty() ? std::to_string(setup.gpus) + " GPU lane(s)" : setup.gpu_summary);
  os << "; " << impl_->config.scheduler.compile_workers << " compile worker(s)";
  if (!impl_->stream_endpoint.empty()) os << ", trajectories pushed on " << impl_->stream_endpoint;
  if (impl_->recorder) os << ", recorded to " << impl_->config.record.path;
  os << ")";
  return os.str();
}

}  // namespace kforge
