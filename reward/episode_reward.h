#pragma once
// The reward rules: turning what the final evaluation of a submission measured into a number,
// with the evidence behind it (times, confidence intervals, which rule fired) as JSON.
//
// CUDA Agent's scheme by default: -1 when the candidate does not compile, does not run, computes
// the wrong function or is caught cheating (the cheating penalty may be lower); otherwise 3 when
// it is faster than eager PyTorch and than torch.compile by more than 5 %, 2 when faster than
// eager only, 1 when neither. "Faster by more than 5 %" is decided on the lower bound of the
// speedup's bootstrap confidence interval (a lucky run of samples does not pay), or on the point
// estimate in point_estimate mode. The torch.compile time now is the task's stored time rescaled by
// (eager median now / eager time stored with it); since both scale with the eager time measured
// now, the speedup over torch.compile is the speedup over eager times (compile stored / eager
// stored), interval included.
//
// Pure functions of their inputs: no GPU, no libtorch, no clock.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reward/reward_config.h"
#include "reward/speedup.h"

namespace kforge {

// The task's stored baselines (data_synth's Baselines, without depending on it).
struct StoredBaseline {
  std::optional<double> eager_ms;
  std::optional<double> compile_ms;
  std::string gpu;  // where they were measured
};

// An anti-cheat refusal seen earlier in the episode, by any tool call that judged a candidate
// (compile's static scan, verify, profile). The episode remembers every one; the reward rules get
// the one that matters for the submission (the environment picks it: the latest catch of the
// submitted content, else the latest catch).
struct EarlierCheat {
  std::string check;            // the anti-cheat check that refused it
  int turn = 0;                 // the step it happened on
  std::string tool;             // compile | verify | profile
  bool same_candidate = false;  // the submitted candidate's judged files are the ones caught
};

// The task's stored torch.compile time over its stored eager time: what turns a speedup over eager
// into one over torch.compile. `factor` when both are positive times; else `unscaled` when only the
// compile time is one (its factor needs the eager median measured now), and `missing` says why.
struct StoredCompileRatio {
  std::optional<double> factor;
  bool unscaled = false;
  std::string missing;
};
StoredCompileRatio stored_compile_ratio(const StoredBaseline& baseline);

// What the final evaluation of a submitted candidate found.
struct SubmissionOutcome {
  enum class Verdict { pass, fail, error, cheat };
  Verdict verdict = Verdict::error;
  std::string error_kind;            // error: compile_error | launch_error | runtime_error | timeout | worker_crashed | ...
  bool compile_stage = false;        // error: it happened while compiling or resolving the launch plan
  std::string cheat_check;           // cheat: the anti-cheat check that caught it
  std::string reason;                // fail / error / cheat: the report's message
  std::vector<double> candidate_ms;  // per-call timing samples of the candidate ...
  std::vector<double> eager_ms;      // ... and of eager PyTorch, interleaved with it (empty: untimed)
  // The evaluator's own interval, used when the samples are too few to recompute one.
  std::optional<SpeedupEstimate> reported_speedup;
  std::string device;  // the GPU it ran on: evidence, and the compile baseline's GPU-model check (compile_baseline.other_gpu)
  // A cheat caught earlier in the episode (see submission_reward for what it changes).
  std::optional<EarlierCheat> earlier_cheat;
  // The candidate at the task's other shapes (the report's `shapes` section): its status (general,
  // not_general, not_tested; empty when the task has none) and the section as JSON (evidence).
  std::string shapes_status;
  nlohmann::ordered_json shapes;
};

const char* verdict_name(SubmissionOutcome::Verdict v);  // "pass", "fail", "error", "cheat"

struct RewardResult {
  double value = 0;
  std::string rule;  // compile_error | run_error | verify_fail | cheat | not_general | correct_untimed |
                     // correct | faster_than_eager | faster_than_both | no_submission
  nlohmann::ordered_json evidence;
};

// A passing submission that is not_general at the task's other shapes gets shapes.penalty (rule
// `not_general`) under shapes.not_general: penalty, before any timing is looked at.
//
// A cheat caught once in an episode is never scored as an honest mistake later in it: with
// `outcome.earlier_cheat` set, the submission gets the cheating penalty (rule and verdict `cheat`,
// `submission_verdict` its own, `check` the earlier check, `cheat_caught_earlier`: check, turn,
// tool, same_candidate) when it is the
// very candidate that was caught (whatever it scores now: the dynamic checks are random draws, a
// cheat that slips through once is still the cheat), or when it does not pass (fail, or an error
// at any stage: a broken variant does not launder the caught cheat). A different candidate that
// passes is judged on its own merit.
RewardResult submission_reward(const RewardConfig& config, const SubmissionOutcome& outcome, const StoredBaseline& baseline);

// The episode ended without a submit (truncated by a limit named by `reason`): the no-submission
// reward, or the cheating penalty when a cheat was caught earlier in it (ending the episode
// without a submission does not launder it either).
RewardResult no_submission_reward(const RewardConfig& config, const std::string& reason,
                                  const std::optional<EarlierCheat>& earlier_cheat = std::nullopt);

// Per-turn shaping: per_turn on every step, plus the first successful compile / verify.
struct TurnShaping {
  double value = 0;
  nlohmann::ordered_json evidence;  // {"per_turn": x, "first_compile": y, ...}, only the terms that apply
};
TurnShaping turn_shaping(const ShapingConfig& config, bool first_compile_now, bool first_verify_now);

}  // namespace kforge
