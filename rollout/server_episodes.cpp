// The episode requests of the rollout server: reset, step (queued on a lane, answered when it
// finishes), close, cancel, and the end of an episode (its trajectory streamed and recorded).
#include "rollout/server_impl.h"

namespace kforge {

namespace {

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

// A client's ROUTER identity as a person reads it: printable bytes as they are, others in hex
// (libzmq's own identities are 5 bytes starting with 0).
std::string client_name(const std::string& identity) {
  bool printable = std::all_of(identity.begin(), identity.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
  if (printable) return "'" + identity + "'";
  static const char* hex = "0123456789abcdef";
  std::string out = "0x";
  for (unsigned char c : identity) out += hex[c >> 4], out += hex[c & 15];
  return out;
}

}  // namespace

std::shared_ptr<Session> RolloutServer::Impl::find(const std::string& id) {
  auto it = sessions.find(id);
  return it == sessions.end() ? nullptr : it->second;
}

ProtocolError RolloutServer::Impl::unknown_episode(const std::string& id) {
  return error(Kind::unknown_episode,
               "no open episode '" + id + "' (never opened, already closed, or reaped after " +
                   std::to_string(static_cast<int>(config.sessions.idle_timeout_s)) + " s idle)",
               "episode");
}

void RolloutServer::Impl::reset(const Envelope& to, const ResetParams& p) {
  if (shutting_down) return reply_error(to, error(Kind::shutting_down, "the server is shutting down; it takes no new episodes"));
  if (static_cast<int>(sessions.size()) >= config.sessions.max_episodes)
    return reply_error(to,
                       busy(std::to_string(sessions.size()) + " episodes are open (sessions.max_episodes); close one or retry later", 1.0));
  auto held = client_episodes.find(to.identity);
  if (held != client_episodes.end() && held->second >= config.sessions.max_episodes_per_client)
    return reply_error(to, busy("client " + client_name(to.identity) + " holds " + std::to_string(held->second) +
                                    " episodes, its cap (sessions.max_episodes_per_client = " +
                                    std::to_string(config.sessions.max_episodes_per_client) + "); close one or retry later",
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
  s->client = to.identity;
  ++client_episodes[s->client];
  sessions.emplace(s->id, s);
  reply(to, {{"episode", s->id}, {"observation", std::move(r.observation)}, {"info", std::move(r.info)}});
}

void RolloutServer::Impl::step(const Envelope& to, const StepParams& p) {
  auto s = find(p.episode);
  if (!s) return reply_error(to, unknown_episode(p.episode));
  s->last_activity = Clock::now();
  if (shutting_down) return reply_error(to, error(Kind::shutting_down, "the server is shutting down; no more steps are taken"));
  if (s->ended)
    return reply_error(
        to, error(Kind::episode_over,
                  "episode '" + p.episode + "' is over (" + s->env.termination_reason() + "); close it and reset another", "episode"));
  if (s->pending)
    return reply_error(to, error(Kind::episode_busy,
                                 "episode '" + p.episode + "' has a step " + (s->pending->state == StepJob::queued ? "queued" : "running") +
                                     "; wait for its reply (or cancel it)",
                                 "episode"));
  auto job = std::make_shared<StepJob>();
  job->id = next_job++;
  job->session = s;
  job->to = to;
  job->action = p.action;
  job->received = Clock::now();
  job->parsed = parse_action(p.action);
  job->lane = s->env.step_lane(job->parsed);  // a step that may end a best_verified episode judges on a GPU
  // Without GPUs a GPU tool is answered at once: the judge says there is no GPU.
  if (job->lane == Lane::gpu && setup.gpus == 0) job->lane = Lane::front;
  if (job->lane == Lane::front) {
    job->state = StepJob::running;
    run_step(*job, *judge);
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
  if (job->lane == Lane::gpu) warm_compile(*s, job->parsed);
}

void RolloutServer::Impl::warm_compile(const Session& s, const ParsedAction& parsed) {
  if (!config.scheduler.warm_compiles || !s.env.task()) return;
  if (compile_queue->queued() * 2 >= static_cast<size_t>(config.scheduler.max_compile_queue)) return;
  std::optional<Candidate> candidate = s.env.candidate_to_judge(parsed);
  if (!candidate) return;
  auto warm = std::make_shared<StepJob>();
  warm->warm = std::make_shared<const StepJob::Warm>(
      StepJob::Warm{*s.env.task(), std::move(*candidate), s.gpu >= 0 ? gpu_state[s.gpu]->device().arch : std::string()});
  if (compile_queue->push(warm)) ++warm_compiles_queued;
}

void RolloutServer::Impl::step_done(const StepJobPtr& job) {
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
  if (job->gpu >= 0) s.gpu_name = gpu_state[job->gpu]->device().name;  // its lane's device, as its worker named it
  s.turns.push_back({{"turn", s.env.turn()},
                     {"action", job->action},
                     {"observation", r.observation},
                     {"reward", r.reward},
                     {"terminated", r.terminated},
                     {"truncated", r.truncated},
                     {"info", r.info},
                     {"timings", timings}});
  s.final_reward = r.reward;
  s.terminated = r.terminated;
  s.truncated = r.truncated;
  if (r.info.contains("episode_reward") && r.info["episode_reward"].is_number()) s.episode_reward = r.info["episode_reward"].get<double>();
  Json payload = {{"episode", s.id},          {"observation", std::move(r.observation)},
                  {"reward", r.reward},       {"terminated", r.terminated},
                  {"truncated", r.truncated}, {"info", std::move(r.info)},
                  {"timings", timings}};
  bool ended = r.terminated || r.truncated;
  if (ended) s.ended = true;
  if (ended || s.closed) {
    // The reply that ends an episode goes out once its trajectory is on disk: a client that saw
    // the end of an episode can count on its record surviving a crash.
    Envelope to = job->to;
    auto data = std::make_shared<Json>(std::move(payload));
    std::string id = s.id;
    finalize(job->session, ended ? "finished" : "closed", [this, to, data, id](const std::string& failed) {
      if (failed.empty()) return reply(to, *data);
      ProtocolError e = record_failed(failed, id);
      e.message += " (the step's reward was " + (*data)["reward"].dump() + ", terminated " + (*data)["terminated"].dump() + ", truncated " +
                   (*data)["truncated"].dump() + ")";
      reply_error(to, e);
    });
    return;
  }
  reply(job->to, payload);
}

ProtocolError RolloutServer::Impl::record_failed(const std::string& why, const std::string& episode) {
  return error(Kind::record_failed, "episode '" + episode + "' ended, but its trajectory could not be recorded (" + why +
                                        "); the server keeps it in memory and retries (health: record.unwritten)");
}

void RolloutServer::Impl::forget(const Session& s) {
  auto it = client_episodes.find(s.client);
  if (it != client_episodes.end() && --it->second <= 0) client_episodes.erase(it);
}

void RolloutServer::Impl::finalize(const std::shared_ptr<Session>& sp, const std::string& cause, Recorder::Outcome then) {
  Session& s = *sp;
  if (s.recorded) {
    if (then) then(s.record_error);
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
            {"turns", std::move(s.turns)},
            {"reward_from", reward_from_name(s.env.config().history.reward_from)},
            {"history", s.env.history().to_json(true)}};
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
    // Every attempt's outcome updates the session; only the first one answers the client.
    auto answered = std::make_shared<bool>(false);
    recorder->add(std::move(bytes), TrajectorySummary::of(t), [sp, then, answered](const std::string& failed) {
      sp->record_error = failed;
      if (*answered) return;
      *answered = true;
      if (then) then(failed);
    });
  } else if (then) {
    then("");
  }
}

void RolloutServer::Impl::close(const Envelope& to, const std::string& id) {
  auto s = find(id);
  if (!s) return reply_error(to, unknown_episode(id));
  sessions.erase(id);
  forget(*s);
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
  finalize(s, s->ended ? "finished" : "closed", [this, to, data, id](const std::string& failed) {
    if (failed.empty()) return reply(to, data);
    reply_error(to, record_failed(failed, id));
  });
}

bool RolloutServer::Impl::cancel_queued(const std::shared_ptr<Session>& s, const char* why) {
  StepJobPtr job = s->pending;
  if (!job) return false;
  WorkQueue* q = job->lane == Lane::gpu ? gpu_queues[job->gpu].get() : compile_queue.get();
  if (!q->remove(job)) return false;
  s->pending = nullptr;
  --in_flight;
  reply_error(job->to, error(Kind::cancelled, std::string("the step was ") + why + "; the episode is unchanged"));
  return true;
}

void RolloutServer::Impl::cancel(const Envelope& to, const std::string& id) {
  auto s = find(id);
  if (!s) return reply_error(to, unknown_episode(id));
  s->last_activity = Clock::now();
  if (!s->pending) return reply(to, {{"episode", id}, {"cancelled", false}, {"state", "idle"}});
  if (cancel_queued(s)) return reply(to, {{"episode", id}, {"cancelled", true}, {"state", "queued"}});
  reply(to, {{"episode", id},
             {"cancelled", false},
             {"state", "running"},
             {"message", "the step is running on its worker and will reply when done"}});
}

}  // namespace kforge
