#include "rollout/server_impl.h"

#include <filesystem>
#include <set>

#ifndef KFORGE_VERSION
#define KFORGE_VERSION "unknown"
#endif

namespace kforge {

const char* kforge_version() { return KFORGE_VERSION; }

namespace {

// Binds `socket` to `endpoint`, or an io error that says what to do about it.
void bind_or_fail(zmq::socket_t& socket, const std::string& endpoint, const char* what) {
  try {
    socket.bind(endpoint);
  } catch (const zmq::error_t& e) {
    const int n = e.num();
    std::string hint = n == EADDRINUSE                     ? "another process (another kforge serve?) holds it; --bind picks another port"
                       : n == ENOENT                       ? "the folder of the ipc path does not exist"
                       : n == ENODEV || n == EADDRNOTAVAIL ? "this machine has no such interface or address"
                                                           : "endpoints look like tcp://HOST:PORT (HOST an address or *, PORT "
                                                             "a number or *) or ipc://PATH";
    KFORGE_FAIL(io, "cannot bind " << what << " to '" << endpoint << "': " << e.what() << " (" << hint << ")");
  }
}

}  // namespace

double RolloutServer::Impl::unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

ProtocolError RolloutServer::Impl::error(Kind kind, std::string message, std::string field) {
  ProtocolError e;
  e.kind = kind;
  e.message = std::move(message);
  e.field = std::move(field);
  return e;
}

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

void RolloutServer::Impl::remove_dead_servers_caches(const std::string& root) {
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

void RolloutServer::Impl::start() {
  if (config.tasks.samples) catalog.add_spec_dir(resource_path("datasets/samples"));
  for (const auto& d : config.tasks.dirs) catalog.add_spec_dir(d);
  for (const auto& d : config.tasks.datasets) catalog.add_dataset(d, config.tasks.serve_unmeasured, config.tasks.min_headroom);
  overlay_own_baselines();

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
    if (g < static_cast<int>(setup.gpu_names.size())) gpu_state.back()->set_device({setup.gpu_names[g], ""});
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
        gpu_state[g]->set_device(
            {device.is_object() ? device.value("name", std::string()) : "", device.is_object() ? device.value("arch", std::string()) : ""});
      } catch (const std::exception& e) {
        std::cerr << "kforge serve: GPU " << g << ": the worker did not start (" << e.what() << "); its steps will report the error"
                  << std::endl;
      }
      gpu_state[g]->worker_starts = ev->gpu_worker().starts();
      lane_loop(*gpu_queues[g], ev, ev, g);
    });
  }
}

void RolloutServer::Impl::lane_loop(WorkQueue& queue, Evaluator* compile_ev, Evaluator* gpu_ev, int gpu) {
  LaneJudge lane_judge(setup.eval, setup.gpus > 0, compile_ev, gpu_ev);
  while (StepJobPtr job = queue.pop()) {
    if (job->warm) {  // a warm compile: the report is not wanted, the cache entry it leaves is
      const auto t0 = Clock::now();
      try {
        compile_ev->check(job->warm->task, job->warm->candidate, job->warm->arch);
      } catch (const std::exception&) {
        // The GPU step compiles it again and reports what failed.
      }
      queue.finished(ms_between(t0, Clock::now()) / 1000.0);
      ++warm_compiles_done;
      continue;
    }
    run_step(*job, lane_judge);
    queue.finished(ms_between(job->started, job->finished) / 1000.0);
    if (gpu >= 0) gpu_state[gpu]->worker_starts = gpu_ev->gpu_worker().starts();
    inbox.post([this, job] { step_done(job); });
  }
}

void RolloutServer::Impl::run_step(StepJob& job, CandidateJudge& judge) {
  job.started = Clock::now();
  job.session->env.set_judge(judge);
  try {
    job.result = job.session->env.step(job.parsed);
  } catch (const std::exception& e) {
    job.failure = e.what();
  }
  job.finished = Clock::now();
  job.state = StepJob::done;
}

void RolloutServer::Impl::stop_lanes() {
  if (compile_queue) compile_queue->stop();
  for (auto& q : gpu_queues) q->stop();
  for (auto& t : threads) t.join();
  threads.clear();
}

void RolloutServer::Impl::send(std::vector<zmq::message_t> frames) {
  // A reply to a client that is gone is dropped by the ROUTER: nothing to do about it.
  try {
    zmq::send_multipart(router, frames, zmq::send_flags::dontwait);
  } catch (const zmq::error_t& e) {
    std::cerr << "kforge serve: a reply could not be sent: " << e.what() << std::endl;
  }
}

ProtocolError RolloutServer::Impl::busy(std::string message, double retry_after) {
  ProtocolError e = error(Kind::busy, std::move(message));
  e.retry_after = std::max(retry_after, config.scheduler.min_retry_after_s);
  return e;
}

void RolloutServer::Impl::handle(const Envelope& to, const Request& req) {
  switch (req.method) {
    case Method::health:
      return reply(to, health());
    case Method::tools:
      return reply(to, {{"tools", tool_schemas()}});
    case Method::tasks:
      return reply(to, catalog.list(std::get<TasksParams>(req.params)));
    case Method::reset:
      return reset(to, std::get<ResetParams>(req.params));
    case Method::step:
      return step(to, std::get<StepParams>(req.params));
    case Method::close:
      return close(to, std::get<CloseParams>(req.params).episode);
    case Method::cancel:
      return cancel(to, std::get<CancelParams>(req.params).episode);
  }
}

std::set<std::string> RolloutServer::Impl::judging_models() const {
  return {setup.gpu_names.begin(), setup.gpu_names.begin() + std::min<size_t>(setup.gpus, setup.gpu_names.size())};
}

void RolloutServer::Impl::overlay_own_baselines() {
  const std::string& dir = config.tasks.baselines;
  if (dir.empty()) return;
  const std::set<std::string> models = judging_models();
  baselines_overlay = {{"folder", dir}, {"key", nullptr}, {"rows", 0}};
  if (models.size() != 1) {
    baselines_overlay["note"] = models.empty() ? "no GPU judges here: no model's baselines taken"
                                               : "GPUs of several models judge here: no one model's baselines taken";
    return;
  }
  const std::string model = *models.begin();
  const std::string best = merged_baselines_of(dir, model);
  if (best.empty()) {
    baselines_overlay["note"] = "no merged baselines of " + model + " in " + dir + " (" + baseline_key_slug(model) +
                                "__torch-*/dataset.h5: kforge baseline, then --merge)";
    return;
  }
  baselines_overlay["key"] = std::filesystem::path(best).parent_path().filename().string();
  baselines_overlay["rows"] = catalog.overlay_baselines(best);
}

// Which GPU models the served tasks' torch.compile baselines were measured on, against the models
// judging here (issue 32): on another model the reward gives no tier 3 from them unless
// reward.compile_baseline.other_gpu is rescale.
Json RolloutServer::Impl::baselines_health() const {
  const std::map<std::string, size_t> by = catalog.compile_baselines_by_gpu();
  Json by_gpu = Json::object();
  size_t with = 0;
  for (const auto& [gpu, n] : by) {
    by_gpu[gpu.empty() ? "unnamed" : gpu] = n;
    with += n;
  }
  const size_t unnamed = by.count("") ? by.at("") : 0;
  const std::set<std::string> models = judging_models();
  const bool refuse = setup.reward.compile_baseline.other_gpu == OtherGpuBaseline::refuse;
  Json judging = Json::array();
  std::string note;
  for (const auto& m : models) {
    const size_t own = by.count(m) ? by.at(m) : 0;
    const size_t other = with - own - unnamed;
    judging.push_back({{"gpu", m}, {"its_own", own}, {"other_gpus", other}, {"unnamed", unnamed}});
    if (other > 0 && refuse)
      note += (note.empty() ? "" : " ") + std::to_string(other) + " task(s) have torch.compile baselines of other GPU models only, not " +
              m + ": they give no tier 3 here (reward.compile_baseline.other_gpu: refuse; measure this GPU's baselines with the " +
              "dataset's GPU stage, tools/dataset/SYNTH_GPU.md).";
  }
  return {{"torch_compile_by_gpu", by_gpu},
          {"without_torch_compile", catalog.without_compile_baseline()},
          {"judging", judging},
          {"other_gpu", other_gpu_baseline_name(setup.reward.compile_baseline.other_gpu)},
          {"overlay", baselines_overlay},
          {"note", note.empty() ? Json() : Json(note)}};
}

Json RolloutServer::Impl::health() {
  Json gpus = Json::array();
  for (int g = 0; g < setup.gpus; ++g) {
    gpus.push_back({{"index", g},
                    {"name", gpu_state[g]->device().name},
                    {"arch", gpu_state[g]->device().arch},
                    {"queued", gpu_queues[g]->queued()},
                    {"running", gpu_queues[g]->running()},
                    {"done", gpu_queues[g]->done()},
                    {"episodes", gpu_state[g]->sessions},
                    {"worker_starts", gpu_state[g]->worker_starts.load()}});
  }
  Json stream = Json();
  if (push) stream = {{"endpoint", stream_endpoint}, {"sent", streamed}, {"backlog", backlog.size()}, {"dropped", stream_dropped}};
  Json record = Json();
  if (recorder)
    record = {{"path", recorder->path()},           {"written", recorder->written()}, {"failed", recorder->failed()},
              {"unwritten", recorder->unwritten()}, {"behind", recorder->behind()},   {"notes", recorder->notes()}};
  Json left_out = Json::array();
  for (const auto& l : catalog.left_out()) {
    Json x = {{"source", l.source}, {"stage", left_out_stage_name(l.stage)}, {"reason", l.reason}, {"rows", l.rows}};
    if (l.level) x["level"] = *l.level;
    left_out.push_back(std::move(x));
  }
  return {
      {"status", shutting_down ? "shutting_down" : "ok"},
      {"version", kforge_version()},
      {"protocol", kProtocolVersion},
      {"uptime_s", std::chrono::duration<double>(Clock::now() - started).count()},
      {"episodes",
       {{"open", sessions.size()},
        {"max", config.sessions.max_episodes},
        {"steps_in_flight", in_flight},
        {"idle_timeout_s", config.sessions.idle_timeout_s}}},
      {"compile",
       {{"workers", config.scheduler.compile_workers},
        {"queued", compile_queue->queued()},
        {"running", compile_queue->running()},
        {"done", compile_queue->done()},
        {"warm", {{"enabled", config.scheduler.warm_compiles}, {"queued", warm_compiles_queued}, {"done", warm_compiles_done.load()}}}}},
      {"gpus", gpus},
      {"tasks", catalog.size()},
      {"baselines", baselines_health()},
      {"left_out", left_out},
      {"trajectories", trajectories},
      {"requests", requests},
      {"stream", stream},
      {"record", record}};
}

void RolloutServer::Impl::flush_stream() {
  while (push && !backlog.empty()) {
    const auto& b = backlog.front();
    auto sent = push->send(zmq::buffer(b.data(), b.size()), zmq::send_flags::dontwait);
    if (!sent) return;  // no puller connected, or it is behind: keep it for later
    backlog.pop_front();
    ++streamed;
  }
}

void RolloutServer::Impl::reap() {
  auto now = Clock::now();
  auto idle = std::chrono::duration<double>(config.sessions.idle_timeout_s);
  for (auto it = sessions.begin(); it != sessions.end();) {
    auto& s = it->second;
    if (!s->pending && now - s->last_activity > idle) {
      finalize(s, s->ended ? "finished" : "idle_timeout");
      forget(*s);
      it = sessions.erase(it);
    } else {
      ++it;
    }
  }
}

void RolloutServer::Impl::receive_some() {
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

void RolloutServer::Impl::begin_shutdown() {
  shutting_down = true;
  shutdown_deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(config.shutdown.grace_s));
  std::deque<StepJobPtr> queued = compile_queue->drain();
  for (auto& q : gpu_queues)
    for (auto& j : q->drain()) queued.push_back(j);
  for (auto& job : queued) {
    if (job->warm) continue;  // nobody waits for a warm compile
    job->session->pending = nullptr;
    --in_flight;
    reply_error(job->to, error(Kind::cancelled, "the server is shutting down; the queued step was not run"));
  }
}

void RolloutServer::Impl::loop(const std::atomic<bool>& stop) {
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

void RolloutServer::Impl::finish_shutdown() {
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

RolloutServer::RolloutServer(ServerConfig config, ServerSetup setup) : impl_(std::make_unique<Impl>(std::move(config), std::move(setup))) {
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
  if (impl_->config.tasks.min_headroom > 0) {
    size_t below = 0;
    for (const LeftOut& l : impl_->catalog.left_out())
      if (l.stage == LeftOutStage::headroom) below += l.rows;
    os << "; " << below << " dataset rows with compile_headroom below " << impl_->config.tasks.min_headroom
       << " or unknown left out (tasks.min_headroom)";
  }
  const ServerSetup& setup = impl_->setup;
  os << "; " << (setup.gpu_summary.empty() ? std::to_string(setup.gpus) + " GPU lane(s)" : setup.gpu_summary);
  os << "; " << impl_->config.scheduler.compile_workers << " compile worker(s)";
  if (!impl_->stream_endpoint.empty()) os << ", trajectories pushed on " << impl_->stream_endpoint;
  if (impl_->recorder)
    os << ", recorded to " << impl_->config.record.path;
  else
    os << ", trajectories not recorded (record.path, or kforge serve --record FILE.h5)";
  os << ")";
  return os.str();
}

}  // namespace kforge
