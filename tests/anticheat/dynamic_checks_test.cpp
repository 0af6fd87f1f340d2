// The dynamic and physical layers' config and rules without a GPU: configs/anticheat.yaml's
// `dynamic:` section (defaults, every key, errors that name the key), the speed-of-light floor on
// synthetic ceilings, and how the report's `anticheat` section is composed.
#include "anticheat/dynamic_checks.h"

#include <gtest/gtest.h>

#include "anticheat/static_checks.h"
#include "configs/error.h"
#include "configs/yaml_reader.h"
#include "tests/test_paths.h"

using namespace kforge;
using kforge::testing::source_dir;

TEST(DynamicCheckConfig, ShippedFileHasTheDefaultsAndEveryKeyIsRead) {
  AnticheatConfig c = AnticheatConfig::load(source_dir() + "/configs/anticheat.yaml");
  DynamicCheckConfig d;
  EXPECT_EQ(c.dynamic.state_checks, d.state_checks);
  EXPECT_EQ(c.dynamic.verify_timed_calls, d.verify_timed_calls);
  EXPECT_EQ(c.dynamic.scrub_reference, d.scrub_reference);
  EXPECT_EQ(c.dynamic.kernel_activity, d.kernel_activity);
  EXPECT_EQ(c.dynamic.speed_of_light, d.speed_of_light);
  EXPECT_DOUBLE_EQ(c.dynamic.sol_headroom, d.sol_headroom);
  EXPECT_EQ(c.dynamic.robustness_draws, d.robustness_draws);
  EXPECT_TRUE(d.robustness_draws);
  EXPECT_DOUBLE_EQ(c.dynamic.robustness_timed_share, d.robustness_timed_share);
  EXPECT_DOUBLE_EQ(c.dynamic.robustness_margin, d.robustness_margin);
  EXPECT_EQ(c.dynamic.address_pool, d.address_pool);
  EXPECT_EQ(c.dynamic.guard_bytes, d.guard_bytes);
  AnticheatConfig o = AnticheatConfig::from_yaml(YamlNode::parse(
      "dynamic: {state_checks: false, verify_timed_calls: false, scrub_reference: false, kernel_activity: false,"
      " speed_of_light: false, sol_headroom: 2.5, robustness_draws: false, robustness_timed_share: 0.5,"
      " robustness_margin: 0.25, address_pool: 4, guard_bytes: 4096}\n",
      "a.yaml"));
  EXPECT_FALSE(o.dynamic.state_checks);
  EXPECT_FALSE(o.dynamic.verify_timed_calls);
  EXPECT_FALSE(o.dynamic.scrub_reference);
  EXPECT_FALSE(o.dynamic.kernel_activity);
  EXPECT_FALSE(o.dynamic.speed_of_light);
  EXPECT_DOUBLE_EQ(o.dynamic.sol_headroom, 2.5);
  EXPECT_FALSE(o.dynamic.robustness_draws);
  EXPECT_DOUBLE_EQ(o.dynamic.robustness_timed_share, 0.5);
  EXPECT_DOUBLE_EQ(o.dynamic.robustness_margin, 0.25);
  EXPECT_EQ(o.dynamic.address_pool, 4);
  EXPECT_EQ(o.dynamic.guard_bytes, 4096);
}

TEST(DynamicCheckConfig, TheOldPrecisionProbeKeyNamesItsSuccessor) {
  try {
    AnticheatConfig::from_yaml(YamlNode::parse("dynamic: {precision_probe: true}\n", "a.yaml"));
    FAIL() << "precision_probe was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("robustness_draws"), std::string::npos) << e.what();
  }
}

TEST(DynamicCheckConfig, RobustnessAndPoolBoundsAreChecked) {
  for (const char* bad : {"dynamic: {robustness_timed_share: 1.5}\n", "dynamic: {robustness_timed_share: 0.75}\n", "dynamic: {robustness_margin: 0}\n",
                          "dynamic: {address_pool: 1}\n", "dynamic: {guard_bytes: 100}\n"}) {
    EXPECT_THROW(AnticheatConfig::from_yaml(YamlNode::parse(bad, "a.yaml")), Error) << bad;
  }
}

TEST(DynamicCheckConfig, ErrorsNameTheKey) {
  auto message = [](const std::string& yaml) {
    try {
      AnticheatConfig::from_yaml(YamlNode::parse(yaml, "anticheat.yaml"));
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("dynamic: {state_check: true}\n").find("state_check"), std::string::npos);
  EXPECT_NE(message("dynamic: {sol_headroom: 0.5}\n").find("sol_headroom"), std::string::npos);
  EXPECT_NE(message("dynamic: {verify_timed_calls: maybe}\n").find("verify_timed_calls"), std::string::npos);
}

TEST(SpeedOfLight, FloorIsTheSlowerOfBytesAndFlops) {
  DeviceCeilings c;
  c.copy_gbps = 4000;           // 4 TB/s
  c.matmul_tflops_fp32 = 50;
  c.matmul_tflops_fp16 = 800;
  // Memory-bound: 4 GB at 4 TB/s x 1.0 = 1 ms; 1 GFLOP at 800 TFLOP/s = 1.25e-3 ms.
  SpeedOfLight m = speed_of_light(4e9, 1e9, c, 1.0);
  EXPECT_NEAR(m.bytes_ms, 1.0, 1e-12);
  EXPECT_NEAR(m.floor_ms, 1.0, 1e-12);
  EXPECT_NEAR(m.flops_ms, 1.25e-3, 1e-15);
  // Headroom divides both.
  SpeedOfLight h = speed_of_light(4e9, 1e9, c, 2.0);
  EXPECT_NEAR(h.floor_ms, 0.5, 1e-12);
  // Compute-bound: 1.6 PFLOP at 800 TFLOP/s = 2000 ms (the fastest peak is used for every dtype).
  SpeedOfLight f = speed_of_light(1e6, 1.6e15, c, 1.0);
  EXPECT_NEAR(f.floor_ms, 2000.0, 1e-9);
  EXPECT_GT(f.flops_ms, f.bytes_ms);
  // Unmeasured ceilings or a headroom below 1 are the harness's bugs, not the candidate's.
  EXPECT_THROW(speed_of_light(1, 1, DeviceCeilings{}, 1.0), Error);
  EXPECT_THROW(speed_of_light(1, 1, c, 0.5), Error);
}

TEST(AnticheatSection, FirstFailedCheckDecides) {
  CheckOutcome ok{"static", true, "", nlohmann::json::object()};
  CheckOutcome bad1{"timed_calls_verified", false, "outputs of timed calls were wrong", {{"mismatching_elements", 12}}};
  CheckOutcome bad2{"speed_of_light", false, "too fast", nlohmann::json::object()};
  nlohmann::json clean = anticheat_section({check_to_json(ok)});
  EXPECT_EQ(clean["verdict"], "clean");
  EXPECT_TRUE(clean["check"].is_null());
  nlohmann::json cheat = anticheat_section({check_to_json(ok), check_to_json(bad1), check_to_json(bad2)});
  EXPECT_EQ(cheat["verdict"], "cheat");
  EXPECT_EQ(cheat["check"], "timed_calls_verified");
  EXPECT_EQ(cheat["message"], "outputs of timed calls were wrong");
  EXPECT_EQ(cheat["checks"].size(), 3u);
  EXPECT_EQ(cheat["checks"][1]["evidence"]["mismatching_elements"], 12);
}
