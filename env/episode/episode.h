#pragma once
// The gym-style environment, in process and torch-free: one episode at a time of a policy writing
// a kernel candidate for a task through tools, judged by the evaluator (which runs its worker
// processes) and rewarded at the end.
//
//   reset(task, seed, options) -> (observation, info)
//   step(action) -> (observation, reward, terminated, truncated, info)      (Gymnasium's contract)
//
// The environment owns the common info fields (turn, elapsed time, GPU time, termination reason)
// and the limits, so no tool can get them wrong: a step that reaches max_turns, the wall-clock or
// the GPU-time budget without submitting truncates the episode with the no-submission reward.
// An action that cannot be parsed or names an unknown tool costs its turn, never the episode.
// env/episode/ENVIRONMENT.md describes the tools, observations, info fields and rewards.
#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "configs/eval_config.h"
#include "data_synth/task/task_spec.h"
#include "env/episode/candidate_history.h"
#include "env/episode/env_config.h"
#include "env/episode/tool_call.h"
#include "env/episode/workspace.h"
#include "env/evaluator/evaluator.h"
#include "reward/episode_reward.h"
#include "reward/reward_config.h"

namespace kforge {

// Thrown by a judge that judged nothing (a server without a GPU: kind "no_gpu"): the tool costs
// its turn, the episode goes on, and info.report is {"harness_error": {"kind", "message"}}.
class NotJudged : public std::runtime_error {
 public:
  NotJudged(std::string kind, const std::string& message) : std::runtime_error(message), kind_(std::move(kind)) {}
  const std::string& kind() const { return kind_; }

 private:
  std::string kind_;
};

// What the episode needs of the evaluator: compile-and-plan checks (no GPU) and full evaluations
// (GPU worker). EvaluatorJudge is the real one.
class CandidateJudge {
 public:
  virtual ~CandidateJudge() = default;
  virtual EvalReport check(const TaskSpec& task, const Candidate& candidate) = 0;
  // May throw NotJudged.
  virtual EvalReport evaluate(const TaskSpec& task, const Candidate& candidate, const EvalOptions& options) = 0;
  virtual const EvalConfig& eval_config() const = 0;
};

class EvaluatorJudge final : public CandidateJudge {
 public:
  explicit EvaluatorJudge(Evaluator& evaluator) : evaluator_(evaluator) {}
  EvalReport check(const TaskSpec& task, const Candidate& candidate) override { return evaluator_.check(task, candidate); }
  EvalReport evaluate(const TaskSpec& task, const Candidate& candidate, const EvalOptions& options) override {
    return evaluator_.evaluate(task, candidate, options);
  }
  const EvalConfig& eval_config() const override { return evaluator_.config(); }

 private:
  Evaluator& evaluator_;
};

struct ResetResult {
  std::string observation;  // the task prompt
  Json info;
};

struct StepResult {
  std::string observation;
  double reward = 0;
  bool terminated = false;  // the policy submitted
  bool truncated = false;   // a limit ended the episode first
  Json info;
};

// Termination reasons (info["termination_reason"]).
namespace termination {
constexpr const char* submitted = "submitted";
constexpr const char* max_turns = "max_turns";
constexpr const char* wall_clock = "wall_clock_budget";
constexpr const char* gpu_time = "gpu_time_budget";
}  // namespace termination

// submission_outcome(report), what a report says as the reward rules read it, is declared in
// env/episode/candidate_history.h (a version's reward is read the same way).
StoredBaseline stored_baseline(const Baselines& baselines);

class KernelEnv {
 public:
  KernelEnv(EnvConfig env, RewardConfig reward, CandidateJudge& judge);

  // Starts an episode. `seed` picks the hidden draw salt of its evaluations. `options` may
  // override limits for this episode ({"max_turns", "wall_clock_s", "gpu_time_s"}), seed the
  // workspace ({"files": {path: content}}) and choose the candidate kind ({"kind": "kernel" |
  // "extension"}, else EnvConfig::kind); anything else is a usage error.
  ResetResult reset(const TaskSpec& task, uint64_t seed, const Json& options = Json::object());
  // One tool call. Throws a usage error when no episode is running (before reset, after the end).
  StepResult step(const Json& action);
  // The same for an action already parsed (parse_action): a server parses each action once.
  StepResult step(const ParsedAction& parsed);
  // The judge the next steps use (a rollout server's lane hands over its own before it runs a
  // step: the lane's evaluators do the work). The judge must outlive those steps.
  void set_judge(CandidateJudge& judge) { judge_ = &judge; }
  // Where a rollout server runs this step: its tool's lane (lane_of), or a GPU lane when the step
  // may end the episode and judge the best verified version again (history.reward_from:
  // best_verified; the last turn, a wall-clock budget within a second of its end, or a GPU-time
  // budget spent), so that a write_file on the last turn does not lose that judging.
  Lane step_lane(const ParsedAction& parsed) const;
  // The candidate a verify, profile or submit step would judge (the workspace's, or submit's
  // `version`), and the task; nullopt for any other step or when there is none to judge. A rollout
  // server compiles it ahead of the step (scheduler.warm_compiles).
  std::optional<Candidate> candidate_to_judge(const ParsedAction& parsed) const;
  const std::optional<TaskSpec>& task() const { return task_; }

  bool running() const { return running_; }
  int turn() const { return turn_; }
  const std::string& termination_reason() const { return termination_; }
  const Workspace& workspace() const { return workspace_; }
  CandidateKind kind() const { return kind_; }
  // Every candidate verify, profile and submit judged in this episode (reset clears it).
  const CandidateHistory& history() const { return history_; }
  const EnvConfig& config() const { return env_; }
  const RewardConfig& reward_config() const { return reward_; }

 private:
  struct ToolResult {
    std::string observation;
    bool ok = false;                   // the tool did what was asked (a failing verify is ok: the tool worked)
    std::optional<EvalReport> report;  // the evaluator's report, when there was one
    Json harness_error;                // {"kind", "message"} when the harness judged nothing (info.report.harness_error)
    bool compiled = false;             // the report shows a successful compile
    bool verified = false;             // the report shows a passing verification
    std::optional<RewardResult> submission;
    std::optional<int> version;  // the history's version of the candidate judged
    bool show_history = false;   // info["history"] on this step
  };
  // An anti-cheat refusal seen in the episode, and the content it refused (candidate_content_hash).
  struct CaughtCheat {
    EarlierCheat cheat;
    std::string content_hash;
  };
  // Runs a call by its Tool: one handler each (a GPU tool's handler is tool_evaluate).
  ToolResult run_tool(const ToolCall& call);
  ToolResult tool_write_file(const Json& arguments);
  ToolResult tool_read_file(const Json& arguments);
  ToolResult tool_list_files() const;
  ToolResult tool_compile();
  ToolResult tool_evaluate(Tool tool, const Json& arguments);
  ToolResult tool_history();
  ToolResult tool_restore(const Json& arguments);
  ToolResult tool_diff(const Json& arguments) const;
  // The episode's reward from the submission's (or no submission's) reward `last`, by
  // env_.history.reward_from (choose_episode_reward over the verified versions' rewards). Under
  // best_verified, a version whose reward would replace `last` is first judged again as a
  // submission (confirm_version): the reward is the lower of the two, a catch is the cheating penalty.
  RewardResult episode_reward(const RewardResult& last, std::optional<int> last_version);
  // Judges version `best` again with a submission's trials and timing, on fresh draws; records the
  // judging (tool `confirm`) in the history. Returns the episode's reward given `last`.
  RewardResult confirm_version(const VersionReward& best, const RewardResult& last, std::optional<int> last_version);
  // Remembers the report's anti-cheat refusal, if it has one.
  void remember_cheat(const std::string& tool, const EvalReport& report, const std::string& content_hash);
  // The catch that decides the reward: the latest of the content `content_hash` (same_candidate),
  // else the latest of any content; none when nothing was caught. "" for no candidate.
  std::optional<EarlierCheat> earlier_cheat(const std::string& content_hash) const;
  EvalOptions next_eval_options(int trials, bool time);
  double elapsed_s() const;
  Json common_info() const;

  EnvConfig env_;
  RewardConfig reward_;
  CandidateJudge* judge_;

  // Episode state.
  std::optional<TaskSpec> task_;
  CandidateKind kind_ = CandidateKind::kernel;  // the episode's (EnvConfig::kind or reset's option)
  EpisodeLimits limits_;
  Workspace workspace_;
  uint64_t seed_ = 0;
  uint64_t salt_ = 0;
  int gpu_calls_ = 0;
  int turn_ = 0;
  bool running_ = false;
  bool compiled_once_ = false;
  bool verified_once_ = false;
  double gpu_time_s_ = 0;
  double total_reward_ = 0;
  double bonus_paid_ = 0;                   // the shaping's first_compile and first_verify paid so far (taken back from a caught cheat)
  std::vector<CaughtCheat> caught_cheats_;  // every anti-cheat refusal of the episode, in order
  CandidateHistory history_;
  std::string termination_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace kforge
