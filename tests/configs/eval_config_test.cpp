#include "configs/eval_config.h"

#include <cstdlib>
#include <functional>

#include <gtest/gtest.h>

#include "tests/test_paths.h"

#include "configs/yaml_reader.h"

using namespace kforge;
using kforge::testing::source_dir;

namespace {

std::string error_text(const std::string& yaml) {
  try {
    EvalConfig::from_yaml(YamlNode::parse(yaml, "eval.yaml"));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(EvalConfig, ShippedFileLoadsAndMatchesTheDefaults) {
  EvalConfig c = EvalConfig::load(source_dir() + "/configs/eval.yaml");
  EvalConfig d;
  EXPECT_EQ(c.timing.min_reps, d.timing.min_reps);
  EXPECT_EQ(c.timing.max_reps, d.timing.max_reps);
  EXPECT_DOUBLE_EQ(c.timing.target_rse, d.timing.target_rse);
  EXPECT_DOUBLE_EQ(c.timing.l2_flush_factor, d.timing.l2_flush_factor);
  EXPECT_EQ(c.precision.profile, "default");
  EXPECT_DOUBLE_EQ(c.precision.for_dtype("float32").atol, 1e-4);
  EXPECT_DOUBLE_EQ(c.precision.for_dtype("bfloat16").rtol, 1e-2);
}

TEST(EvalConfig, CudaAgentProfileUsesOneHundredthEverywhere) {
  EvalConfig c = EvalConfig::from_yaml(YamlNode::parse("precision: {profile: cuda-agent}\n", "e.yaml"));
  EXPECT_DOUBLE_EQ(c.precision.for_dtype("float32").atol, 1e-2);
  EXPECT_DOUBLE_EQ(c.precision.for_dtype("float16").rtol, 1e-2);
}

TEST(EvalConfig, MisspeltKeyIsRejectedWithFileAndKey) {
  EXPECT_EQ(error_text("timing:\n  target_rsee: 0.01\n"), "eval.yaml:2:3: timing.target_rsee: unknown key (did you mean 'target_rse'?)");
  EXPECT_NE(error_text("timng: {}\n").find("timng: unknown key (did you mean 'timing'?)"), std::string::npos);
}

TEST(EvalConfig, OutOfRangeValuesAreRejected) {
  EXPECT_NE(error_text("timing: {l2_flush_factor: 1}\n").find("timing.l2_flush_factor: must be >= 2"), std::string::npos);
  EXPECT_NE(error_text("timing: {min_reps: 50, max_reps: 10}\n").find("timing.max_reps: must be >= min_reps"), std::string::npos);
  EXPECT_NE(error_text("timing: {target_rse: 0}\n").find("target_rse: must be in (0, 1)"), std::string::npos);
  EXPECT_NE(error_text("precision: {profile: nope}\n").find("profile 'nope' is not defined"), std::string::npos);
  EXPECT_NE(error_text("precision: {profiles: {x: {float32: {atol: -1, rtol: 0}}}}\n").find("atol and rtol must be >= 0"),
            std::string::npos);
  EXPECT_NE(error_text("draws: {salt: -3}\n").find("expected a non-negative integer"), std::string::npos);
}

TEST(EvalConfig, WrongTypeNamesTheKey) {
  EXPECT_NE(error_text("timing: {l2_flush: maybe}\n").find("timing.l2_flush: expected true or false, found 'maybe'"), std::string::npos);
}

TEST(EvalConfig, EmptyFileGivesDefaults) {
  EvalConfig c = EvalConfig::from_yaml(YamlNode::parse("", "empty.yaml"));
  EXPECT_EQ(c.timing.warmup_count, TimingConfig{}.warmup_count);
}
