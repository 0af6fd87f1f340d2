#include "reward/reward_config.h"

#include <algorithm>
#include <cmath>

#include "configs/yaml_reader.h"

namespace kforge {

const char* decision_mode_name(DecisionMode m) { return m == DecisionMode::ci_lower_bound ? "ci_lower_bound" : "point_estimate"; }

const char* missing_compile_baseline_name(MissingCompileBaseline m) {
  return m == MissingCompileBaseline::eager_only ? "eager_only" : "as_eager";
}

const char* not_general_name(NotGeneral m) { return m == NotGeneral::penalty ? "penalty" : "reward"; }

namespace {

// A reward value: any finite number (inf would make every sum meaningless).
double finite(const YamlNode& node, const std::string& key, double fallback) {
  double v = node.get<double>(key, fallback);
  if (!std::isfinite(v)) node.at(key).fail("must be a finite number");
  return v;
}

}  // namespace

DecisionConfig DecisionConfig::from_yaml(const YamlNode& node) {
  DecisionConfig c;
  std::string mode = node.get<std::string>("mode", decision_mode_name(c.mode));
  if (mode == "ci_lower_bound")
    c.mode = DecisionMode::ci_lower_bound;
  else if (mode == "point_estimate")
    c.mode = DecisionMode::point_estimate;
  else
    node.at("mode").fail("must be ci_lower_bound or point_estimate, not '" + mode + "'");
  c.eager_threshold = finite(node, "eager_threshold", c.eager_threshold);
  c.compile_threshold = finite(node, "compile_threshold", c.compile_threshold);
  for (const char* k : {"eager_threshold", "compile_threshold"})
    if (node.has(k) && !(node.req<double>(k) > 0)) node.at(k).fail("must be > 0 (a speedup ratio)");
  c.interval.confidence = node.get<double>("confidence", c.interval.confidence);
  if (!(c.interval.confidence > 0 && c.interval.confidence < 1)) node.at("confidence").fail("must be in (0, 1)");
  c.interval.resamples = node.get<int>("resamples", c.interval.resamples);
  if (c.interval.resamples < 100) node.at("resamples").fail("must be >= 100");
  c.interval.min_samples = node.get<int>("min_samples", c.interval.min_samples);
  if (c.interval.min_samples < 5) node.at("min_samples").fail("must be >= 5 (a median's interval from fewer under-covers)");
  std::string method = node.get<std::string>("interval", "bca");
  if (method == "bca")
    c.interval.method = IntervalMethod::bca;
  else if (method == "percentile")
    c.interval.method = IntervalMethod::percentile;
  else
    node.at("interval").fail("must be bca or percentile, not '" + method + "'");
  node.check_no_unknown_keys();
  return c;
}

TierConfig TierConfig::from_yaml(const YamlNode& node) {
  TierConfig c;
  c.correct = finite(node, "correct", c.correct);
  c.faster_than_eager = finite(node, "faster_than_eager", c.faster_than_eager);
  c.faster_than_both = finite(node, "faster_than_both", c.faster_than_both);
  if (c.faster_than_eager < c.correct)
    (node.has("faster_than_eager") ? node.at("faster_than_eager") : node.at("correct")).fail("faster_than_eager must be >= correct");
  if (c.faster_than_both < c.faster_than_eager)
    (node.has("faster_than_both") ? node.at("faster_than_both") : node.at("faster_than_eager"))
        .fail("faster_than_both must be >= faster_than_eager");
  node.check_no_unknown_keys();
  return c;
}

FailureConfig FailureConfig::from_yaml(const YamlNode& node) {
  FailureConfig c;
  c.compile_error = finite(node, "compile_error", c.compile_error);
  c.run_error = finite(node, "run_error", c.run_error);
  c.verify_fail = finite(node, "verify_fail", c.verify_fail);
  c.cheat = finite(node, "cheat", c.cheat);
  c.no_submission = finite(node, "no_submission", c.no_submission);
  // No cheat may ever pay more than an honest failure.
  double worst_honest = std::min({c.compile_error, c.run_error, c.verify_fail});
  if (c.cheat > worst_honest) {
    (node.has("cheat") ? node.at("cheat") : node.at("compile_error"))
        .fail("cheat (" + std::to_string(c.cheat) + ") must be <= every other failure reward (lowest: " + std::to_string(worst_honest) +
              "): cheating must never pay more than failing honestly");
  }
  node.check_no_unknown_keys();
  return c;
}

CompileBaselineConfig CompileBaselineConfig::from_yaml(const YamlNode& node) {
  CompileBaselineConfig c;
  c.allow_unscaled = node.get<bool>("allow_unscaled", c.allow_unscaled);
  std::string m = node.get<std::string>("when_missing", missing_compile_baseline_name(c.when_missing));
  if (m == "eager_only")
    c.when_missing = MissingCompileBaseline::eager_only;
  else if (m == "as_eager")
    c.when_missing = MissingCompileBaseline::as_eager;
  else
    node.at("when_missing").fail("must be eager_only or as_eager, not '" + m + "'");
  const std::string g = node.get<std::string>("other_gpu", other_gpu_baseline_name(c.other_gpu));
  if (g == "refuse")
    c.other_gpu = OtherGpuBaseline::refuse;
  else if (g == "rescale")
    c.other_gpu = OtherGpuBaseline::rescale;
  else
    node.at("other_gpu").fail("must be refuse or rescale, not '" + g + "'");
  node.check_no_unknown_keys();
  return c;
}

const char* other_gpu_baseline_name(OtherGpuBaseline m) { return m == OtherGpuBaseline::refuse ? "refuse" : "rescale"; }

ShapingConfig ShapingConfig::from_yaml(const YamlNode& node) {
  ShapingConfig c;
  c.per_turn = finite(node, "per_turn", c.per_turn);
  c.first_compile = finite(node, "first_compile", c.first_compile);
  c.first_verify = finite(node, "first_verify", c.first_verify);
  c.log_speedup_weight = finite(node, "log_speedup_weight", c.log_speedup_weight);
  c.log_speedup_clip = finite(node, "log_speedup_clip", c.log_speedup_clip);
  if (c.log_speedup_clip <= 0) node.at("log_speedup_clip").fail("must be > 0");
  node.check_no_unknown_keys();
  return c;
}

ShapesRewardConfig ShapesRewardConfig::from_yaml(const YamlNode& node) {
  ShapesRewardConfig c;
  std::string m = node.get<std::string>("not_general", not_general_name(c.not_general));
  if (m == "penalty")
    c.not_general = NotGeneral::penalty;
  else if (m == "reward")
    c.not_general = NotGeneral::reward;
  else
    node.at("not_general").fail("must be penalty or reward, not '" + m + "'");
  c.penalty = finite(node, "penalty", c.penalty);
  node.check_no_unknown_keys();
  return c;
}

RewardConfig RewardConfig::from_yaml(const YamlNode& node) {
  RewardConfig c;
  if (node.is_null()) return c;
  if (auto n = node.find("decision")) c.decision = DecisionConfig::from_yaml(*n);
  if (auto n = node.find("tiers")) c.tiers = TierConfig::from_yaml(*n);
  if (auto n = node.find("failures")) c.failures = FailureConfig::from_yaml(*n);
  if (auto n = node.find("compile_baseline")) c.compile_baseline = CompileBaselineConfig::from_yaml(*n);
  if (auto n = node.find("shaping")) c.shaping = ShapingConfig::from_yaml(*n);
  if (auto n = node.find("shapes")) c.shapes = ShapesRewardConfig::from_yaml(*n);
  if (c.shapes.penalty >= c.tiers.correct)
    (node.has("shapes") && node.at("shapes").has("penalty") ? node.at("shapes").at("penalty") : node)
        .fail("shapes.penalty (" + std::to_string(c.shapes.penalty) + ") must be below tiers.correct (" + std::to_string(c.tiers.correct) +
              "): a kernel that works at one shape only must earn less than a general correct one");
  // Failures must pay less than the least a correct candidate earns.
  double best_failure =
      std::max({c.failures.compile_error, c.failures.run_error, c.failures.verify_fail, c.failures.cheat, c.failures.no_submission});
  if (best_failure >= c.tiers.correct) {
    node.fail("every failure reward must be below tiers.correct (" + std::to_string(c.tiers.correct) + "); the highest is " +
              std::to_string(best_failure));
  }
  node.check_no_unknown_keys();
  return c;
}

RewardConfig RewardConfig::load(const std::string& path) { return from_yaml(YamlNode::load_file(path, ErrorKind::config)); }

}  // namespace kforge
