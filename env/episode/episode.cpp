#include "env/episode/episode.h"

#include <sstream>

#include "configs/error.h"
#include "env/episode/observation.h"
#include "env/episode/prompt.h"
#include "env/episode/report_text.h"
#include "env/process/clock.h"
#include "reward/sequential.h"

namespace kforge {

namespace {

Json plain_json(const nlohmann::ordered_json& j) { return Json::parse(j.dump()); }

}  // namespace

SubmissionOutcome submission_outcome(const EvalReport& report) {
  SubmissionOutcome o;
  switch (report.verdict) {
    case Verdict::pass:
      o.verdict = SubmissionOutcome::Verdict::pass;
      break;
    case Verdict::fail:
      o.verdict = SubmissionOutcome::Verdict::fail;
      if (report.verify) o.reason = report.verify->reason;
      break;
    case Verdict::cheat: {
      o.verdict = SubmissionOutcome::Verdict::cheat;
      const CheckOutcome* c = report.anticheat ? report.anticheat->failed() : nullptr;
      o.cheat_check = c ? c->name : "";
      o.reason = c ? c->message : "";
      break;
    }
    case Verdict::error:
    case Verdict::checked:
      o.verdict = SubmissionOutcome::Verdict::error;
      o.error_kind = report.error ? report.error->kind : std::string("internal_error");
      o.reason = report.error ? report.error->message : "";
      o.compile_stage = o.error_kind == "compile_error" || (o.error_kind == "timeout" && report.compile && !report.compile->ok);
      break;
  }
  if (report.timing) {
    const TimingSection& t = *report.timing;
    o.candidate_ms = t.candidate_samples_ms;
    o.eager_ms = t.reference_samples_ms;
    SpeedupEstimate e;
    e.point = t.speedup.point;
    e.lo = t.speedup.lo;
    e.hi = t.speedup.hi;
    e.confidence = t.speedup.confidence;
    e.method = t.speedup.method;
    if (e.point > 0) o.reported_speedup = e;
  }
  if (report.device) o.device = report.device->name;
  if (report.shapes) {
    o.shapes_status = report.shapes->status;
    o.shapes = nlohmann::ordered_json::parse(to_json(*report.shapes).dump());
  }
  return o;
}

StoredBaseline stored_baseline(const Baselines& b) {
  StoredBaseline s;
  s.eager_ms = b.eager_ms;
  s.compile_ms = b.compile_ms;
  s.gpu = b.gpu;
  return s;
}

KernelEnv::KernelEnv(EnvConfig env, RewardConfig reward, CandidateJudge& judge)
    : env_(std::move(env)), reward_(std::move(reward)), judge_(&judge), limits_(env_.limits), workspace_(env_.workspace) {}

ResetResult KernelEnv::reset(const TaskSpec& task, uint64_t seed, const Json& options) {
  KFORGE_CHECK(options.is_null() || options.is_object(), usage, "reset options must be an object");
  EpisodeLimits limits = env_.limits;
  CandidateKind kind = env_.kind;
  Workspace ws(env_.workspace);
  if (options.is_object()) {
    for (const auto& [key, value] : options.items()) {
      if (key == "max_turns") {
        KFORGE_CHECK(value.is_number_integer() && value.get<int64_t>() >= 1, usage, "reset option max_turns must be an integer >= 1");
        limits.max_turns = value.get<int>();
      } else if (key == "wall_clock_s" || key == "gpu_time_s") {
        KFORGE_CHECK(value.is_number() && value.get<double>() >= 0, usage, "reset option " << key << " must be a number >= 0");
        (key == "wall_clock_s" ? limits.wall_clock_s : limits.gpu_time_s) = value.get<double>();
      } else if (key == "files") {
        KFORGE_CHECK(value.is_object(), usage, "reset option files must map paths to contents");
        for (const auto& [path, content] : value.items()) {
          KFORGE_CHECK(content.is_string(), usage, "reset option files: the content of " << path << " must be a string");
          std::string why = ws.write(path, content.get<std::string>());
          KFORGE_CHECK(why.empty(), usage, "reset option files: " << why);
        }
      } else if (key == "kind") {
        KFORGE_CHECK(value.is_string(), usage, "reset option kind must be \"kernel\" or \"extension\"");
        kind = parse_candidate_kind(value.get<std::string>());  // a usage error naming the kinds otherwise
      } else {
        KFORGE_FAIL(usage, "unknown reset option '" << key << "' (known: max_turns, wall_clock_s, gpu_time_s, files, kind)");
      }
    }
  }
  std::string prompt = trim_middle(render_prompt(task, env_, reward_, kind), static_cast<size_t>(limits.prompt_max_chars));
  task_ = task;
  kind_ = kind;
  limits_ = limits;
  workspace_ = std::move(ws);
  seed_ = seed;
  // The policy never sees its inputs' salt: it is derived from the episode seed and the eval config's.
  salt_ = splitmix64(seed ^ splitmix64(judge_->eval_config().draws.salt)) | 1;
  gpu_calls_ = 0;
  turn_ = 0;
  running_ = true;
  compiled_once_ = verified_once_ = false;
  caught_cheats_.clear();
  history_.clear();
  gpu_time_s_ = 0;
  total_reward_ = 0;
  bonus_paid_ = 0;
  termination_.clear();
  start_ = Clock::now();
  ResetResult r;
  r.observation = prompt;
  r.info = common_info();
  r.info["tools"] = tool_schemas();
  return r;
}

double KernelEnv::elapsed_s() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

Json KernelEnv::common_info() const {
  return {{"task", task_ ? task_->id : ""},
          {"seed", seed_},
          {"turn", turn_},
          {"max_turns", limits_.max_turns},
          {"elapsed_s", elapsed_s()},
          {"wall_clock_budget_s", limits_.wall_clock_s},
          {"gpu_time_s", gpu_time_s_},
          {"gpu_time_budget_s", limits_.gpu_time_s},
          {"termination_reason", termination_.empty() ? Json() : Json(termination_)},
          {"episode_reward", total_reward_}};
}

EvalOptions KernelEnv::next_eval_options(int trials, bool time) {
  EvalOptions o;
  o.trials = trials;
  o.time = time;
  // Timing may stop once the reward's decisions are settled (reward/sequential.h).
  if (time && task_) o.decide_at = decision_thresholds(reward_, stored_baseline(task_->baselines)).value_or(std::vector<double>{});
  o.salt = salt_;  // every call's inputs are drawn afresh by the GPU worker, from seeds it never sends
  ++gpu_calls_;
  return o;
}

void KernelEnv::remember_cheat(const std::string& tool, const EvalReport& report, const std::string& content_hash) {
  if (report.verdict != Verdict::cheat) return;
  CaughtCheat c;
  const CheckOutcome* failed = report.anticheat ? report.anticheat->failed() : nullptr;
  c.cheat.check = failed ? failed->name : std::string("anticheat");
  c.cheat.turn = turn_;
  c.cheat.tool = tool;
  c.content_hash = content_hash;
  caught_cheats_.push_back(std::move(c));
}

std::optional<EarlierCheat> KernelEnv::earlier_cheat(const std::string& content_hash) const {
  if (caught_cheats_.empty()) return std::nullopt;
  if (!content_hash.empty()) {
    for (auto it = caught_cheats_.rbegin(); it != caught_cheats_.rend(); ++it) {
      if (it->content_hash != content_hash) continue;
      EarlierCheat e = it->cheat;
      e.same_candidate = true;
      return e;
    }
  }
  EarlierCheat e = caught_cheats_.back().cheat;
  e.same_candidate = false;
  return e;
}

KernelEnv::ToolResult KernelEnv::tool_compile() {
  ToolResult r;
  std::string why;
  auto cand = workspace_.candidate("workspace", kind_, why);
  if (!cand) {
    r.observation = "compile: " + why + "\n";
    return r;
  }
  r.report = judge_->check(*task_, *cand);
  remember_cheat(tool_spec(Tool::compile).name, *r.report, candidate_content_hash(*cand));  // the static scan runs before compiling
  r.ok = true;
  r.compiled = r.report->compiled();
  r.observation = compile_text(*r.report, static_cast<size_t>(limits_.observation_max_chars) * 3 / 4);
  return r;
}

KernelEnv::ToolResult KernelEnv::tool_evaluate(Tool tool, const Json& arguments) {
  ToolResult r;
  const std::string& name = tool_spec(tool).name;
  std::string why;
  std::optional<Candidate> cand;
  if (arguments.contains("version")) {  // submit(version=N): that version's files, the workspace untouched
    int number = arguments["version"].get<int>();
    const CandidateVersion* v = history_.find(number);
    if (!v) {
      r.observation = name + ": there is no version " + std::to_string(number) + " (" + std::to_string(history_.versions().size()) +
                      " so far; history() lists them); nothing was submitted\n";
      return r;
    }
    cand = v->files;
    cand->dir = "v" + std::to_string(number);
  } else {
    cand = workspace_.candidate("workspace", kind_, why);
  }
  if (!cand) {
    r.observation = name + ": " + why + "\n";
    if (tool == Tool::submit) {
      // A submit with nothing to submit ends the episode as a failed compile: it was asked for.
      SubmissionOutcome o;
      o.verdict = SubmissionOutcome::Verdict::error;
      o.error_kind = "compile_error";
      o.compile_stage = true;
      o.reason = why;
      o.earlier_cheat = earlier_cheat("");
      r.submission = submission_reward(reward_, o, stored_baseline(task_->baselines));
    }
    return r;
  }
  const EvalConfig& ec = judge_->eval_config();
  int verify_trials = env_.tools.verify_trials > 0 ? env_.tools.verify_trials : ec.verify.trials;
  EvalOptions opt = tool == Tool::submit    ? next_eval_options(ec.verify.submit_trials, true)
                    : tool == Tool::profile ? next_eval_options(verify_trials, env_.tools.profile_times)
                                            : next_eval_options(verify_trials, false);
  if (tool == Tool::profile) {
    opt.profile = true;
    const bool asked = arguments.value("counters", false);
    opt.counters = env_.tools.profile_counters == CountersWhen::always || (asked && env_.tools.profile_counters == CountersWhen::asked);
    opt.counter_metrics = env_.tools.profile_metrics;
  }
  try {
    r.report = judge_->evaluate(*task_, *cand, opt);
  } catch (const NotJudged& e) {
    // The judge ran nothing (a server without a GPU: kind no_gpu): no verdict, no submission; the episode goes on.
    r.harness_error = {{"kind", e.kind()}, {"message", e.what()}};
    r.observation = name + ": not run (" + e.kind() + "): " + e.what() + "\n";
    return r;
  }
  const EvalReport& report = *r.report;
  r.ok = true;
  if (report.gpu_request_wall_ms) gpu_time_s_ += *report.gpu_request_wall_ms / 1000.0;
  r.compiled = report.compiled();
  const bool passed = report.verdict == Verdict::pass;
  r.verified = passed;
  size_t log_budget = static_cast<size_t>(limits_.observation_max_chars) * 3 / 4;
  std::ostringstream os;
  os << verify_text(report, log_budget);
  if (passed && (tool == Tool::profile || tool == Tool::submit)) os << timing_text(report, task_->baselines);
  if (passed && tool == Tool::profile)
    os << profile_text(report, opt.counters ? ""
                               : env_.tools.profile_counters == CountersWhen::never
                                   ? "not read in this environment (tools.profile_counters: never)"
                                   : "not read; profile(counters=true) reads them (the call is replayed once per counter pass)");
  std::string content_hash = candidate_content_hash(*cand);
  r.version = history_.record(*cand, content_hash, name, turn_, report);
  os << "(version v" << *r.version << (history_.find(*r.version)->judgings.size() > 1 ? ", judged before" : "") << ")\n";
  if (tool == Tool::submit) {
    SubmissionOutcome o = submission_outcome(report);
    o.earlier_cheat = earlier_cheat(content_hash);  // a cheat caught earlier is not scored as an honest mistake now
    r.submission = submission_reward(reward_, o, stored_baseline(task_->baselines));
  }
  remember_cheat(name, report, content_hash);
  r.observation = os.str();
  return r;
}

KernelEnv::ToolResult KernelEnv::tool_write_file(const Json& arguments) {
  ToolResult r;
  std::string path = arguments["path"].get<std::string>();
  const std::string& content = arguments["content"].get_ref<const std::string&>();
  std::string why = workspace_.write(path, content);
  r.ok = why.empty();
  r.observation = r.ok
                      ? "wrote " + path + " (" + std::to_string(content.size()) + " bytes); the workspace holds " +
                            std::to_string(workspace_.files().size()) + " file(s), " + std::to_string(workspace_.total_bytes()) + " bytes\n"
                      : "write_file refused: " + why + "\n";
  return r;
}

KernelEnv::ToolResult KernelEnv::tool_read_file(const Json& arguments) {
  ToolResult r;
  std::string path = arguments["path"].get<std::string>();
  auto content = workspace_.read(path);
  r.ok = content.has_value();
  if (r.ok) {
    r.observation = *content;
  } else {
    std::string why = workspace_.check_path(path);
    r.observation = "read_file: " + (why.empty() ? "no file " + path + " in the workspace (list_files shows what there is)" : why) + "\n";
  }
  return r;
}

KernelEnv::ToolResult KernelEnv::tool_list_files() const {
  ToolResult r;
  r.ok = true;
  std::ostringstream os;
  if (workspace_.files().empty()) os << "the workspace is empty\n";
  for (const auto& [p, c] : workspace_.files()) os << p << "  " << c.size() << " bytes\n";
  r.observation = os.str();
  return r;
}

KernelEnv::ToolResult KernelEnv::tool_history() {
  ToolResult r;
  r.ok = true;
  r.show_history = true;
  r.observation = history_.text();
  return r;
}

KernelEnv::ToolResult KernelEnv::tool_restore(const Json& arguments) {
  ToolResult r;
  int number = arguments["version"].get<int>();
  const CandidateVersion* v = history_.find(number);
  if (!v) {
    r.observation = "restore: there is no version " + std::to_string(number) + " (" + std::to_string(history_.versions().size()) +
                    " so far; history() lists them)\n";
    return r;
  }
  // Every judged file or none: a half-restored candidate would be a third version nobody wrote.
  Workspace next = workspace_;
  std::string why, written;
  for (const auto& [path, content] : judged_files(v->files)) {
    if (why.empty()) why = next.write(path, content);
    written += (written.empty() ? "" : ", ") + path + " (" + std::to_string(content.size()) + " bytes)";
  }
  if (!why.empty()) {
    r.observation = "restore refused: " + why + "\n";
    return r;
  }
  workspace_ = std::move(next);
  r.ok = true;
  r.observation =
      "restored v" + std::to_string(number) + ": " + written + "; its last verdict was " + verdict_name(v->last_verdict()) + "\n";
  return r;
}

KernelEnv::ToolResult KernelEnv::tool_diff(const Json& arguments) const {
  ToolResult r;
  const CandidateVersion* a = history_.find(arguments["a"].get<int>());
  const CandidateVersion* b = history_.find(arguments["b"].get<int>());
  if (!a || !b) {
    r.observation = "diff: there is no version " + std::to_string(arguments[!a ? "a" : "b"].get<int>()) + " (" +
                    std::to_string(history_.versions().size()) + " so far; history() lists them)\n";
    return r;
  }
  r.ok = true;
  r.observation = version_diff(*a, *b);
  return r;
}

std::optional<Candidate> KernelEnv::candidate_to_judge(const ParsedAction& parsed) const {
  if (!running_ || !parsed.call) return std::nullopt;
  const Tool tool = parsed.call->tool;
  if (tool != Tool::verify && tool != Tool::profile && tool != Tool::submit) return std::nullopt;
  const Json& arguments = parsed.call->arguments;
  if (arguments.contains("version")) {
    const CandidateVersion* v = history_.find(arguments["version"].get<int>());
    if (!v) return std::nullopt;
    Candidate c = v->files;
    c.dir = "v" + std::to_string(v->number);
    return c;
  }
  std::string why;
  return workspace_.candidate("workspace", kind_, why);
}

Lane KernelEnv::step_lane(const ParsedAction& parsed) const {
  const Lane lane = lane_of(parsed);
  if (lane == Lane::gpu || !running_ || env_.history.reward_from != RewardFrom::best_verified) return lane;
  bool any_verified = false;
  for (const CandidateVersion& v : history_.versions()) any_verified = any_verified || v.verified();
  const bool may_end = turn_ + 1 >= limits_.max_turns || (limits_.wall_clock_s > 0 && elapsed_s() + 1.0 >= limits_.wall_clock_s) ||
                       (limits_.gpu_time_s > 0 && gpu_time_s_ >= limits_.gpu_time_s);
  return any_verified && may_end ? Lane::gpu : lane;
}

RewardResult KernelEnv::episode_reward(const RewardResult& last, std::optional<int> last_version) {
  std::vector<VersionReward> verified;
  if (env_.history.reward_from == RewardFrom::best_verified) {
    for (const CandidateVersion& v : history_.versions()) {
      if (!v.verified()) continue;
      SubmissionOutcome o = v.outcome;
      o.earlier_cheat = earlier_cheat(v.content_hash);  // the same rule as a submission of it
      verified.push_back({v.number, submission_reward(reward_, o, stored_baseline(task_->baselines))});
    }
  }
  // The version that would replace `last` (choose_episode_reward's rule: the highest, ties to the later).
  const VersionReward* best = nullptr;
  for (const VersionReward& v : verified)
    if (!best || v.reward.value >= best->reward.value) best = &v;
  if (!best || last.rule == "cheat" || best->reward.value <= last.value)
    return choose_episode_reward(env_.history.reward_from, last, last_version, verified);
  return confirm_version(*best, last, last_version);
}

// Picking the best of many judged versions picks their luck too: of twenty versions of one kernel
// that sits at the tier line, one's interval clears it by chance far more often than one
// submission's does, and profile() verifies with fewer trials than a submission. So the picked
// version is judged once more as a submission, on draws and timing nobody has seen, and cannot gain
// from it: the reward is the lower of the two.
RewardResult KernelEnv::confirm_version(const VersionReward& best, const RewardResult& last, std::optional<int> last_version) {
  const CandidateVersion& v = *history_.find(best.version);
  Candidate cand = v.files;
  cand.dir = "v" + std::to_string(best.version);
  const std::string hash = v.content_hash;
  nlohmann::ordered_json confirmation = {{"version", best.version},
                                         {"selected", {{"rule", best.reward.rule}, {"reward", best.reward.value}}}};
  std::optional<EvalReport> report;
  try {
    report = judge_->evaluate(*task_, cand, next_eval_options(judge_->eval_config().verify.submit_trials, true));
  } catch (const NotJudged& e) {
    confirmation["why"] = e.kind() + ": " + e.what();
  } catch (const Error& e) {
    confirmation["why"] = std::string(error_kind_name(e.kind())) + ": " + e.what();
  }
  RewardResult chosen;
  if (!report) {  // not judged again, so not rewarded above `last`
    confirmation["ran"] = false;
    chosen = choose_episode_reward(env_.history.reward_from, last, last_version, {});
  } else {
    if (report->gpu_request_wall_ms) gpu_time_s_ += *report->gpu_request_wall_ms / 1000.0;
    history_.record(cand, hash, "confirm", turn_, *report);
    remember_cheat("confirm", *report, hash);
    SubmissionOutcome o = submission_outcome(*report);
    o.earlier_cheat = earlier_cheat(hash);
    RewardResult confirmed = submission_reward(reward_, o, stored_baseline(task_->baselines));
    confirmation["ran"] = true;
    confirmation["verdict"] = verdict_name(report->verdict);
    confirmation["rule"] = confirmed.rule;
    confirmation["reward"] = confirmed.value;
    if (confirmed.rule == "cheat") {  // the version the reward would come from is a cheat: the episode's reward is the penalty
      chosen = confirmed;
      chosen.evidence["reward_from"] = reward_from_name(env_.history.reward_from);
      chosen.evidence["version"] = best.version;
      chosen.evidence["last"] = {{"rule", last.rule}, {"reward", last.value}};
    } else {
      const RewardResult& lower = confirmed.value < best.reward.value ? confirmed : best.reward;
      chosen = choose_episode_reward(env_.history.reward_from, last, last_version, {{best.version, lower}});
    }
  }
  chosen.evidence["confirmation"] = confirmation;
  return chosen;
}

KernelEnv::ToolResult KernelEnv::run_tool(const ToolCall& call) {
  switch (call.tool) {  // every Tool has a case: the compiler (-Wswitch) names one that is missing
    case Tool::write_file:
      return tool_write_file(call.arguments);
    case Tool::read_file:
      return tool_read_file(call.arguments);
    case Tool::list_files:
      return tool_list_files();
    case Tool::compile:
      return tool_compile();
    case Tool::verify:
    case Tool::profile:
    case Tool::submit:
      return tool_evaluate(call.tool, call.arguments);
    case Tool::history:
      return tool_history();
    case Tool::restore:
      return tool_restore(call.arguments);
    case Tool::diff:
      return tool_diff(call.arguments);
  }
  KFORGE_FAIL(internal, "no handler for the tool " << call.name);
}

StepResult KernelEnv::step(const Json& action) { return step(parse_action(action)); }

StepResult KernelEnv::step(const ParsedAction& parsed) {
  KFORGE_CHECK(
      running_, usage,
      (task_ ? "the episode is over (" + termination_ + "); call reset() to start another" : std::string("call reset() before step()")));
  ++turn_;
  StepResult s;
  ToolResult result;
  std::string tool_name;
  if (!parsed.call) {
    result.observation = "error: " + parsed.error + "\n";
  } else {
    tool_name = parsed.call->name;
    try {
      result = run_tool(*parsed.call);
    } catch (const Error& e) {
      // A failure of kforge itself while running a tool (a worker that cannot start, an unreadable
      // file): the policy reads it, the episode goes on.
      result = ToolResult();
      result.observation = tool_name + ": the harness failed (" + std::string(error_kind_name(e.kind())) + "): " + e.what() + "\n";
      result.harness_error = {{"kind", error_kind_name(e.kind())}, {"message", e.what()}};
    } catch (const std::exception& e) {
      // A bug of kforge's (a report it cannot read): reported, not fatal to the episode.
      result = ToolResult();
      result.observation = tool_name + ": the harness failed (internal_error): " + e.what() + "\n";
      result.harness_error = {{"kind", "internal_error"}, {"message", e.what()}};
    }
    if (!parsed.note.empty()) result.observation = "note: " + parsed.note + "\n" + result.observation;
  }

  bool first_compile = false, first_verify = false;
  if (!parsed.call || parsed.call->tool != Tool::submit) {
    first_compile = result.compiled && !compiled_once_;
    first_verify = result.verified && !verified_once_;
  }
  compiled_once_ = compiled_once_ || result.compiled;
  verified_once_ = verified_once_ || result.verified;
  TurnShaping shaping = turn_shaping(reward_.shaping, first_compile, first_verify);
  s.reward = shaping.value;
  bonus_paid_ += shaping.evidence.value("first_compile", 0.0) + shaping.evidence.value("first_verify", 0.0);

  Json reward_info;
  std::string final_rule;  // the episode's reward rule, on its last step
  if (result.submission) {
    s.terminated = true;
    termination_ = termination::submitted;
    RewardResult chosen = episode_reward(*result.submission, result.version);
    final_rule = chosen.rule;
    s.reward += chosen.value;
    reward_info = plain_json(chosen.evidence);
    result.observation += reward_text(chosen);
  } else if (turn_ >= limits_.max_turns) {
    termination_ = termination::max_turns;
  } else if (limits_.wall_clock_s > 0 && elapsed_s() >= limits_.wall_clock_s) {
    termination_ = termination::wall_clock;
  } else if (limits_.gpu_time_s > 0 && gpu_time_s_ >= limits_.gpu_time_s) {
    termination_ = termination::gpu_time;
  }
  if (!s.terminated && !termination_.empty()) {
    s.truncated = true;
    RewardResult none = no_submission_reward(reward_, termination_, earlier_cheat(""));
    RewardResult chosen = episode_reward(none, std::nullopt);
    final_rule = chosen.rule;
    s.reward += chosen.value;
    reward_info = plain_json(chosen.evidence);
    std::ostringstream os;
    os << "the episode ended: " << termination_ << " reached without a submission; reward " << chosen.value;
    if (none.rule == "cheat") os << " (cheat: " << none.evidence.value("why", std::string()) << ")";
    if (chosen.evidence.contains("last"))
      os << " (" << chosen.rule << ", from v" << chosen.evidence["version"].get<int>() << ", the best verified version)";
    os << "\n" << confirmation_text(chosen);
    result.observation += os.str();
  }
  if (final_rule == "cheat" && bonus_paid_ != 0) {
    // A caught cheat keeps none of the shaping's bonuses it was paid on the way (a cheat that slipped
    // through a verify earned first_verify): the episode totals the turn costs and the penalty.
    s.reward -= bonus_paid_;
    reward_info["shaping_taken_back"] = bonus_paid_;
    std::ostringstream os;
    os << "  the shaping's bonuses paid earlier (" << bonus_paid_ << ") are taken back: a caught cheat keeps none\n";
    result.observation += os.str();
    bonus_paid_ = 0;
  }
  running_ = !(s.terminated || s.truncated);
  total_reward_ += s.reward;

  s.observation = trim_middle(result.observation, static_cast<size_t>(limits_.observation_max_chars));
  s.info = common_info();
  s.info["tool"] = tool_name.empty() ? Json() : Json(tool_name);
  s.info["tool_ok"] = result.ok;
  s.info["action_error"] = parsed.call ? Json() : Json(parsed.error);
  if (result.report) {
    s.info["verdict"] = verdict_name(result.report->verdict);
    s.info["report"] = to_json(*result.report);
  } else if (!result.harness_error.is_null()) {
    s.info["verdict"] = nullptr;
    s.info["report"] = {{"harness_error", result.harness_error}};
  }
  if (result.version) s.info["version"] = *result.version;
  // The history changes only on a judging step, so a client that keeps the latest list it saw is current.
  if (result.show_history || result.version || !running_) s.info["history"] = history_.to_json(false);
  if (!shaping.evidence.empty()) s.info["shaping"] = plain_json(shaping.evidence);
  if (!reward_info.is_null()) s.info["reward"] = reward_info;
  return s;
}

}  // namespace kforge
