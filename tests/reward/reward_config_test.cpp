// configs/reward.yaml: the shipped file is the defaults; every error names its file, line and key.
#include "reward/reward_config.h"

#include <gtest/gtest.h>

#include "configs/error.h"
#include "configs/yaml_reader.h"
#include "tests/test_paths.h"

using namespace kforge;
using kforge::testing::source_dir;

namespace {

std::string error_text(const std::string& yaml) {
  try {
    RewardConfig::from_yaml(YamlNode::parse(yaml, "reward.yaml"));
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::config);
    return e.what();
  }
  return "";
}

}  // namespace

TEST(RewardConfig, ShippedFileLoadsAndMatchesTheDefaults) {
  RewardConfig c = RewardConfig::load(source_dir() + "/configs/reward.yaml");
  RewardConfig d;
  EXPECT_EQ(c.decision.mode, DecisionMode::ci_lower_bound);
  EXPECT_EQ(c.decision.mode, d.decision.mode);
  EXPECT_DOUBLE_EQ(c.decision.eager_threshold, 1.05);
  EXPECT_DOUBLE_EQ(c.decision.compile_threshold, d.decision.compile_threshold);
  EXPECT_DOUBLE_EQ(c.decision.interval.confidence, d.decision.interval.confidence);
  EXPECT_EQ(c.decision.interval.resamples, d.decision.interval.resamples);
  EXPECT_EQ(c.decision.interval.method, IntervalMethod::bca);
  EXPECT_EQ(c.tiers.correct, 1);
  EXPECT_EQ(c.tiers.faster_than_eager, 2);
  EXPECT_EQ(c.tiers.faster_than_both, 3);
  EXPECT_EQ(c.failures.cheat, -1);
  EXPECT_EQ(c.failures.no_submission, d.failures.no_submission);
  EXPECT_EQ(c.compile_baseline.when_missing, MissingCompileBaseline::eager_only);
  EXPECT_FALSE(c.compile_baseline.allow_unscaled);
  EXPECT_EQ(c.compile_baseline.other_gpu, OtherGpuBaseline::refuse);
  EXPECT_EQ(c.compile_baseline.other_gpu, d.compile_baseline.other_gpu);
  EXPECT_EQ(c.shaping.per_turn, 0);
  EXPECT_EQ(c.shaping.log_speedup_weight, 0);
  EXPECT_EQ(c.shapes.not_general, NotGeneral::penalty);
  EXPECT_EQ(c.shapes.not_general, d.shapes.not_general);
  EXPECT_EQ(c.shapes.penalty, d.shapes.penalty);
}

TEST(RewardConfig, PointEstimateModeAndACheatPenaltyBelowMinusOne) {
  RewardConfig c = RewardConfig::from_yaml(YamlNode::parse("decision: {mode: point_estimate}\nfailures: {cheat: -5}\n", "reward.yaml"));
  EXPECT_EQ(c.decision.mode, DecisionMode::point_estimate);
  EXPECT_EQ(c.failures.cheat, -5);
}

TEST(RewardConfig, MisspeltKeyIsRejectedWithFileLineAndKey) {
  EXPECT_EQ(error_text("tiers:\n  faster_than_egaer: 2\n"),
            "reward.yaml:2:3: tiers.faster_than_egaer: unknown key (did you mean 'faster_than_eager'?)");
  EXPECT_NE(error_text("shapping: {}\n").find("shapping: unknown key (did you mean 'shaping'?)"), std::string::npos);
}

TEST(RewardConfig, WrongTypesAreRejectedWithTheKey) {
  EXPECT_NE(error_text("decision:\n  eager_threshold: fast\n").find("reward.yaml:2:20: decision.eager_threshold: expected a number"),
            std::string::npos)
      << error_text("decision:\n  eager_threshold: fast\n");
  EXPECT_NE(error_text("compile_baseline: {allow_unscaled: 1}\n").find("compile_baseline.allow_unscaled: expected true or false"),
            std::string::npos);
  EXPECT_NE(error_text("decision: {resamples: 2.5}\n").find("decision.resamples"), std::string::npos);
}

TEST(RewardConfig, OutOfRangeValuesAreRejected) {
  EXPECT_NE(error_text("decision: {mode: median}\n").find("decision.mode: must be ci_lower_bound or point_estimate"), std::string::npos);
  EXPECT_NE(error_text("decision: {confidence: 1}\n").find("decision.confidence: must be in (0, 1)"), std::string::npos);
  EXPECT_NE(error_text("decision: {resamples: 10}\n").find("decision.resamples: must be >= 100"), std::string::npos);
  EXPECT_NE(error_text("decision: {eager_threshold: 0}\n").find("decision.eager_threshold: must be > 0"), std::string::npos);
  EXPECT_NE(error_text("decision: {interval: student}\n").find("decision.interval: must be bca or percentile"), std::string::npos);
  EXPECT_NE(error_text("tiers: {faster_than_both: 1.5}\n").find("tiers.faster_than_both: faster_than_both must be >= faster_than_eager"),
            std::string::npos);
  EXPECT_NE(error_text("failures: {compile_error: .inf}\n").find("failures.compile_error: must be a finite number"), std::string::npos);
  EXPECT_NE(error_text("compile_baseline: {when_missing: guess}\n").find("must be eager_only or as_eager"), std::string::npos);
  EXPECT_NE(error_text("compile_baseline: {other_gpu: maybe}\n").find("compile_baseline.other_gpu: must be refuse or rescale"),
            std::string::npos);
  EXPECT_NE(error_text("shaping: {log_speedup_clip: 0}\n").find("shaping.log_speedup_clip: must be > 0"), std::string::npos);
}

TEST(RewardConfig, CheatingCanNeverPayMoreThanAnHonestFailure) {
  std::string e = error_text("failures: {cheat: -0.5}\n");
  EXPECT_NE(e.find("failures.cheat: cheat"), std::string::npos) << e;
  EXPECT_NE(e.find("must never pay more than failing honestly"), std::string::npos) << e;
  EXPECT_EQ(error_text("failures: {cheat: -3, verify_fail: -2}\n"), "");
}

TEST(RewardConfig, AFailureMayNotPayAsMuchAsACorrectCandidate) {
  EXPECT_NE(error_text("failures: {no_submission: 1}\n").find("every failure reward must be below tiers.correct"), std::string::npos);
  EXPECT_NE(error_text("tiers: {correct: -2}\n").find("below tiers.correct"), std::string::npos);
}

TEST(RewardConfig, AShapeBoundCandidateMayNotEarnAsMuchAsAGeneralCorrectOne) {
  RewardConfig c = RewardConfig::from_yaml(YamlNode::parse("shapes: {not_general: reward}\n", "reward.yaml"));
  EXPECT_EQ(c.shapes.not_general, NotGeneral::reward);
  EXPECT_EQ(RewardConfig::from_yaml(YamlNode::parse("shapes: {penalty: 0.5}\n", "reward.yaml")).shapes.penalty, 0.5);
  std::string e = error_text("shapes: {penalty: 1}\n");
  EXPECT_NE(e.find("shapes.penalty: shapes.penalty (1.000000) must be below tiers.correct"), std::string::npos) << e;
  e = error_text("shapes: {not_general: forgive}\n");
  EXPECT_NE(e.find("shapes.not_general: must be penalty or reward, not 'forgive'"), std::string::npos) << e;
  EXPECT_NE(
      error_text("tiers: {correct: -2}\nfailures: {compile_error: -3, run_error: -3, verify_fail: -3, cheat: -3, no_submission: -3}\n")
          .find("shapes.penalty"),
      std::string::npos)
      << "the default penalty (-1) is checked against a lowered tiers.correct too";
}
