#pragma once
// Typed view of configs/reward.yaml: how an episode's measurements become its reward. Defaults
// live here, beside the fields (CUDA Agent's tiers, decided on the lower bound of the speedup's
// confidence interval); the YAML file documents and may override them. Loading validates every
// value once and rejects unknown keys, so a misspelt reward parameter is an error, never ignored.
#include <string>

#include "reward/speedup.h"

namespace kforge {

class YamlNode;

// How "faster by more than 5 %" is decided.
enum class DecisionMode {
  ci_lower_bound,  // the lower bound of the speedup's confidence interval must exceed the threshold
  point_estimate,  // the median ratio must exceed it (CUDA Agent's published scheme)
};
const char* decision_mode_name(DecisionMode m);  // "ci_lower_bound", "point_estimate"

struct DecisionConfig {
  DecisionMode mode = DecisionMode::ci_lower_bound;
  double eager_threshold = 1.05;    // speedup over eager PyTorch must be strictly above this
  double compile_threshold = 1.05;  // speedup over torch.compile must be strictly above this
  SpeedupOptions interval;          // confidence, resamples, method of the bootstrap interval
  static DecisionConfig from_yaml(const YamlNode& node);
};

// Rewards of a correct candidate.
struct TierConfig {
  double correct = 1;            // correct, not faster than eager by the threshold
  double faster_than_eager = 2;  // faster than eager only
  double faster_than_both = 3;   // faster than eager and torch.compile
  static TierConfig from_yaml(const YamlNode& node);
};

// Rewards of an episode that earns no tier.
struct FailureConfig {
  double compile_error = -1;  // does not compile (or the launch plan is wrong, or the compile timed out)
  double run_error = -1;      // compiled but faulted, hung, or was refused at launch
  double verify_fail = -1;    // ran but computed the wrong function
  double cheat = -1;          // caught by an anti-cheat check; may be set below -1, never above a failure
  double no_submission = -1;  // the episode ended (truncated) without a submit()
  static FailureConfig from_yaml(const YamlNode& node);
};

// What to do when the task stores no usable torch.compile time.
enum class MissingCompileBaseline {
  eager_only,  // tier faster_than_both cannot be reached; faster than eager earns faster_than_eager
  as_eager,    // torch.compile is taken to be exactly as fast as eager
};
const char* missing_compile_baseline_name(MissingCompileBaseline m);

// A stored baseline measured on another GPU model than the one judging now (issue 32): torch.compile's
// ratio to eager differs between GPU generations, so the rescaled compile time puts the tier-3 line
// in the wrong place there.
enum class OtherGpuBaseline {
  refuse,   // treated as missing (when_missing decides): no tier 3 from another model's baseline
  rescale,  // rescaled by eager now as on its own GPU, the two models named in the evidence
};
const char* other_gpu_baseline_name(OtherGpuBaseline m);  // "refuse", "rescale"

struct CompileBaselineConfig {
  // The stored torch.compile time is rescaled by (eager now / eager stored); a task storing a
  // compile time without the eager time it was measured beside cannot be rescaled.
  bool allow_unscaled = false;  // then use the stored compile time as it is (else: treat it as missing)
  MissingCompileBaseline when_missing = MissingCompileBaseline::eager_only;
  OtherGpuBaseline other_gpu = OtherGpuBaseline::refuse;
  static CompileBaselineConfig from_yaml(const YamlNode& node);
};

// Optional shaping on top of the tiers; all off by default (the published scheme).
struct ShapingConfig {
  double per_turn = 0;            // added to every step's reward (e.g. -0.01 for a turn cost)
  double first_compile = 0;       // the first turn whose compile() succeeds
  double first_verify = 0;        // the first turn whose verify() (or profile()) passes
  double log_speedup_weight = 0;  // a correct submission adds weight * ln(speedup over eager) ...
  double log_speedup_clip = 2;    // ... with ln(speedup) clipped to [-clip, clip]
  static ShapingConfig from_yaml(const YamlNode& node);
};

// A candidate right at the task's own shape and wrong at one of its other shapes (the evaluation
// report's `shapes` status "not_general"; TaskSpec::extra_dims): it works only at the size it was
// shown, which is no kernel for the operator.
enum class NotGeneral {
  penalty,  // the reward is `penalty` (no tier, however fast)
  reward,   // its tier, as if it were general (the shapes stay in the evidence)
};
const char* not_general_name(NotGeneral m);  // "penalty", "reward"

struct ShapesRewardConfig {
  NotGeneral not_general = NotGeneral::penalty;
  double penalty = -1;  // below tiers.correct: never as much as a general correct candidate
  static ShapesRewardConfig from_yaml(const YamlNode& node);
};

struct RewardConfig {
  DecisionConfig decision;
  TierConfig tiers;
  FailureConfig failures;
  CompileBaselineConfig compile_baseline;
  ShapingConfig shaping;
  ShapesRewardConfig shapes;

  static RewardConfig from_yaml(const YamlNode& node);
  static RewardConfig load(const std::string& path);
};

}  // namespace kforge
