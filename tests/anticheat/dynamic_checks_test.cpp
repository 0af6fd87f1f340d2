// The dynamic and physical layers' config and rules without a GPU: configs/anticheat.yaml's
// `dynamic:` section (defaults, every key, errors that name the key), the speed-of-light floor on
// synthetic ceilings per precision (MathPrecision), and how the report's `anticheat` section is composed.
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
  EXPECT_DOUBLE_EQ(c.dynamic.robustness_margin, d.robustness_margin);
  EXPECT_EQ(c.dynamic.address_pool, d.address_pool);
  EXPECT_EQ(c.dynamic.guard_bytes, d.guard_bytes);
  EXPECT_EQ(c.dynamic.extension_libraries, d.extension_libraries);
  EXPECT_TRUE(d.extension_libraries.empty());
  AnticheatConfig o = AnticheatConfig::from_yaml(
      YamlNode::parse("dynamic: {state_checks: false, verify_timed_calls: false, scrub_reference: false, kernel_activity: false,"
                      " speed_of_light: false, sol_headroom: 2.5, robustness_draws: false,"
                      " robustness_margin: 0.25, address_pool: 4, guard_bytes: 4096, extension_libraries: [cublas, cudnn]}\n",
                      "a.yaml"));
  EXPECT_FALSE(o.dynamic.state_checks);
  EXPECT_FALSE(o.dynamic.verify_timed_calls);
  EXPECT_FALSE(o.dynamic.scrub_reference);
  EXPECT_FALSE(o.dynamic.kernel_activity);
  EXPECT_FALSE(o.dynamic.speed_of_light);
  EXPECT_DOUBLE_EQ(o.dynamic.sol_headroom, 2.5);
  EXPECT_FALSE(o.dynamic.robustness_draws);
  EXPECT_DOUBLE_EQ(o.dynamic.robustness_margin, 0.25);
  EXPECT_EQ(o.dynamic.address_pool, 4);
  EXPECT_EQ(o.dynamic.guard_bytes, 4096);
  EXPECT_EQ(o.dynamic.extension_libraries, (std::vector<std::string>{"cublas", "cudnn"}));
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
  for (const char* bad :
       {"dynamic: {robustness_timed_share: 0.25}\n", "dynamic: {robustness_margin: 0}\n", "dynamic: {address_pool: 1}\n",
        "dynamic: {guard_bytes: 100}\n", "dynamic: {extension_libraries: [cufft]}\n", "dynamic: {extension_libraries: cublas}\n"}) {
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

namespace {

// H200-like ceilings (tools/bench/RESULTS.md; TF32 at half the float16 rate, as on the H100/H200).
DeviceCeilings h200_like() {
  DeviceCeilings c;
  c.copy_gbps = 4000;  // 4 TB/s
  c.matmul_tflops_fp32 = 50;
  c.matmul_tflops_tf32 = 400;
  c.matmul_tflops_fp16 = 800;
  return c;
}

}  // namespace

TEST(SpeedOfLight, FloorIsTheSlowerOfBytesAndFlops) {
  const DeviceCeilings c = h200_like();
  // Memory-bound: 4 GB at 4 TB/s x 1.0 = 1 ms; 1 GFLOP at 800 TFLOP/s (float16) = 1.25e-3 ms.
  SpeedOfLight m = speed_of_light(4e9, 1e9, MathPrecision::float16, c, 1.0);
  EXPECT_NEAR(m.bytes_ms, 1.0, 1e-12);
  EXPECT_NEAR(m.floor_ms, 1.0, 1e-12);
  EXPECT_NEAR(m.flops_ms, 1.25e-3, 1e-15);
  // Headroom divides both.
  SpeedOfLight h = speed_of_light(4e9, 1e9, MathPrecision::float16, c, 2.0);
  EXPECT_NEAR(h.floor_ms, 0.5, 1e-12);
  EXPECT_NEAR(h.flops_ms, 0.625e-3, 1e-15);
  // Compute-bound: 1.6 PFLOP at 800 TFLOP/s = 2000 ms.
  SpeedOfLight f = speed_of_light(1e6, 1.6e15, MathPrecision::float16, c, 1.0);
  EXPECT_NEAR(f.floor_ms, 2000.0, 1e-9);
  EXPECT_GT(f.flops_ms, f.bytes_ms);
  // The bytes floor does not depend on the precision.
  EXPECT_DOUBLE_EQ(speed_of_light(4e9, 1, MathPrecision::float32, c, 1.0).bytes_ms, m.bytes_ms);
}

TEST(SpeedOfLight, Float16TasksUseTheFloat16TensorPeak) {
  DeviceCeilings c = h200_like();
  SpeedOfLight s = speed_of_light(1, 1.6e15, MathPrecision::float16, c, 1.0);
  EXPECT_DOUBLE_EQ(s.peak_tflops, 800.0);
  EXPECT_EQ(s.precision, MathPrecision::float16);
  EXPECT_NEAR(s.flops_ms, 2000.0, 1e-9);
  // Not the float32 or TF32 figures, whatever they are.
  c.matmul_tflops_tf32 = 5000;
  c.matmul_tflops_fp32 = 3000;
  EXPECT_DOUBLE_EQ(peak_tflops(c, MathPrecision::float16), 800.0);
}

TEST(SpeedOfLight, Float32TasksUseTheFastestSplitThatMeetsFloat32) {
  DeviceCeilings c = h200_like();
  // max(50, 400 / 3, 800 / 3): the 16-bit split (bf16x3) at a third of the float16 rate.
  EXPECT_DOUBLE_EQ(peak_tflops(c, MathPrecision::float32), 800.0 / 3.0);
  SpeedOfLight s = speed_of_light(1, 1.6e15, MathPrecision::float32, c, 1.0);
  EXPECT_DOUBLE_EQ(s.peak_tflops, 800.0 / 3.0);
  EXPECT_NEAR(s.flops_ms, 6000.0, 1e-9);
  EXPECT_EQ(s.precision, MathPrecision::float32);
  // 3xTF32 where TF32 runs faster than the 16-bit rate: max(50, 900 / 3, 800 / 3) = 300.
  c.matmul_tflops_tf32 = 900;
  EXPECT_DOUBLE_EQ(peak_tflops(c, MathPrecision::float32), 300.0);
  // Plain float32 where neither split beats it: max(500, 400 / 3, 800 / 3) = 500.
  c = h200_like();
  c.matmul_tflops_fp32 = 500;
  EXPECT_DOUBLE_EQ(peak_tflops(c, MathPrecision::float32), 500.0);
  // Integer-only tasks: the float32 rate.
  EXPECT_DOUBLE_EQ(peak_tflops(h200_like(), MathPrecision::integer), 50.0);
}

TEST(SpeedOfLight, AFloat32TaskHasAHigherFloorThanTheSameTaskInFloat16) {
  const DeviceCeilings c = h200_like();
  for (double headroom : {1.0, 1.5}) {
    SpeedOfLight f32 = speed_of_light(1e6, 1e12, MathPrecision::float32, c, headroom);
    SpeedOfLight f16 = speed_of_light(1e6, 1e12, MathPrecision::float16, c, headroom);
    EXPECT_GT(f32.floor_ms, f16.floor_ms) << headroom;
    EXPECT_NEAR(f32.floor_ms / f16.floor_ms, 3.0, 1e-12) << headroom;
  }
  // The old floor divided every dtype's FLOPs by the fastest peak: a float32 floor 3x below this one.
  EXPECT_GT(speed_of_light(1, 1e12, MathPrecision::float32, c, 1.0).flops_ms, 1e12 / (800e12) * 1e3 * 2.9);
}

TEST(SpeedOfLight, ThePrecisionFollowsTheTensorsAndTheTolerance) {
  const Tolerance tight{1e-4, 1e-4}, loose{1e-2, 1e-2};
  EXPECT_EQ(math_precision(true, false, tight), MathPrecision::float32);
  // One rounding to a 10-bit mantissa fits a tolerance of 2^-11 or more: 16-bit math may pass.
  EXPECT_EQ(math_precision(true, false, loose), MathPrecision::float16);
  EXPECT_EQ(math_precision(true, false, Tolerance{1.0 / 2048, 1e-5}), MathPrecision::float16);
  EXPECT_EQ(math_precision(true, false, Tolerance{1e-5, 1.0 / 2048}), MathPrecision::float16);
  EXPECT_EQ(math_precision(true, false, Tolerance{4.8e-4, 4.8e-4}), MathPrecision::float32);
  // Any 16-bit floating tensor: its contract is 16-bit, whatever the tolerance says.
  EXPECT_EQ(math_precision(true, true, tight), MathPrecision::float16);
  EXPECT_EQ(math_precision(false, true, tight), MathPrecision::float16);
  EXPECT_EQ(math_precision(false, false, tight), MathPrecision::integer);
  EXPECT_STREQ(math_precision_name(MathPrecision::float32), "float32");
  EXPECT_STREQ(math_precision_name(MathPrecision::float16), "float16");
  EXPECT_STREQ(math_precision_name(MathPrecision::integer), "integer");
}

TEST(SpeedOfLight, InvalidCeilingsOrHeadroomThrow) {
  // Unmeasured ceilings or a headroom below 1 are the harness's bugs, not the candidate's.
  for (MathPrecision p : {MathPrecision::float32, MathPrecision::float16, MathPrecision::integer}) {
    EXPECT_THROW(speed_of_light(1, 1, p, DeviceCeilings{}, 1.0), Error);
    DeviceCeilings no_tf32 = h200_like();
    no_tf32.matmul_tflops_tf32 = 0;  // a worker that measured only the older three
    EXPECT_THROW(speed_of_light(1, 1, p, no_tf32, 1.0), Error);
    DeviceCeilings no_copy = h200_like();
    no_copy.copy_gbps = 0;
    EXPECT_THROW(speed_of_light(1, 1, p, no_copy, 1.0), Error);
    EXPECT_THROW(speed_of_light(1, 1, p, h200_like(), 0.5), Error);
  }
  EXPECT_FALSE(DeviceCeilings{}.valid());
  EXPECT_TRUE(h200_like().valid());
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
