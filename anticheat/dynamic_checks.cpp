#include "anticheat/dynamic_checks.h"

#include <algorithm>

#include "configs/error.h"
#include "configs/yaml_reader.h"

namespace kforge {

DynamicCheckConfig DynamicCheckConfig::from_yaml(const YamlNode& node) {
  DynamicCheckConfig c;
  if (node.is_null()) return c;
  c.state_checks = node.get<bool>("state_checks", c.state_checks);
  c.verify_timed_calls = node.get<bool>("verify_timed_calls", c.verify_timed_calls);
  c.scrub_reference = node.get<bool>("scrub_reference", c.scrub_reference);
  c.kernel_activity = node.get<bool>("kernel_activity", c.kernel_activity);
  c.speed_of_light = node.get<bool>("speed_of_light", c.speed_of_light);
  if (node.has("precision_probe"))
    node.at("precision_probe").fail("was renamed robustness_draws (it now covers every dtype and more draws than 2^k scaling)");
  c.robustness_draws = node.get<bool>("robustness_draws", c.robustness_draws);
  if (node.has("robustness_timed_share"))
    node.at("robustness_timed_share")
        .fail(
            "is gone: every timed call now draws from a member of the draw family, in blocks of every usable member, and every "
            "timed call is counted (the slowest member sets the speedup)");
  c.robustness_margin = node.get<double>("robustness_margin", c.robustness_margin);
  if (!(c.robustness_margin > 0.0 && c.robustness_margin <= 1.0))
    node.at("robustness_margin").fail("must be in (0, 1] (the share of the tolerance the reference itself may use)");
  c.address_pool = node.get<int>("address_pool", c.address_pool);
  if (c.address_pool < 2 || c.address_pool > 8) node.at("address_pool").fail("must be between 2 and 8 buffer sets");
  c.guard_bytes = node.get<int64_t>("guard_bytes", c.guard_bytes);
  if (c.guard_bytes < 256 || c.guard_bytes > (int64_t{64} << 20) || c.guard_bytes % 256 != 0)
    node.at("guard_bytes").fail("must be a multiple of 256 between 256 bytes and 64 MiB");
  c.sol_headroom = node.get<double>("sol_headroom", c.sol_headroom);
  if (!(c.sol_headroom >= 1.0 && c.sol_headroom <= 100.0))
    node.at("sol_headroom").fail("must be between 1 and 100 (the measured ceilings are multiplied by it)");
  c.extension_libraries = node.get<std::vector<std::string>>("extension_libraries", c.extension_libraries);
  for (const auto& name : c.extension_libraries)
    if (!is_extension_library(name))
      node.at("extension_libraries").fail("'" + name + "' is not a library kforge tells apart (aten, cublas, cudnn)");
  node.check_no_unknown_keys();
  return c;
}

bool is_extension_library(const std::string& name) { return name == "aten" || name == "cublas" || name == "cudnn"; }

const char* math_precision_name(MathPrecision p) {
  switch (p) {
    case MathPrecision::float32:
      return "float32";
    case MathPrecision::float16:
      return "float16";
    case MathPrecision::integer:
      return "integer";
  }
  return "?";
}

MathPrecision math_precision(bool any_float32, bool any_16bit_float, const Tolerance& tolerance) {
  if (any_16bit_float) return MathPrecision::float16;
  if (!any_float32) return MathPrecision::integer;
  // 2^-11: the unit roundoff of a 10-bit mantissa (TF32, float16). A tolerance at least that loose
  // may be met by one pass of 16-bit tensor-core math, so the float16 peak is the honest bound.
  const double ten_bit_roundoff = 1.0 / 2048.0;
  return std::max(tolerance.atol, tolerance.rtol) >= ten_bit_roundoff ? MathPrecision::float16 : MathPrecision::float32;
}

double peak_tflops(const DeviceCeilings& c, MathPrecision precision) {
  switch (precision) {
    case MathPrecision::float16:
      return c.matmul_tflops_fp16;
    case MathPrecision::float32:  // 3xTF32 or the 16-bit split, whichever is faster; plain float32 if neither
      return std::max({c.matmul_tflops_fp32, c.matmul_tflops_tf32 / 3.0, c.matmul_tflops_fp16 / 3.0});
    case MathPrecision::integer:
      return c.matmul_tflops_fp32;
  }
  return c.matmul_tflops_fp16;
}

SpeedOfLight speed_of_light(double min_bytes, double flops, MathPrecision precision, const DeviceCeilings& c, double headroom) {
  KFORGE_CHECK(c.valid(), internal, "speed of light: the device's ceilings were not measured");
  KFORGE_CHECK(headroom >= 1.0, internal, "speed of light: headroom below 1");
  SpeedOfLight s;
  s.precision = precision;
  s.peak_tflops = peak_tflops(c, precision);
  s.bytes_ms = std::max(0.0, min_bytes) / (c.copy_gbps * 1e9 * headroom) * 1e3;
  s.flops_ms = std::max(0.0, flops) / (s.peak_tflops * 1e12 * headroom) * 1e3;
  s.floor_ms = std::max(s.bytes_ms, s.flops_ms);
  return s;
}

nlohmann::json check_to_json(const CheckOutcome& c) {
  return {{"name", c.name}, {"passed", c.passed}, {"message", c.message}, {"evidence", c.evidence}};
}

nlohmann::json anticheat_section(const std::vector<nlohmann::json>& checks) {
  nlohmann::json out = {{"verdict", "clean"}, {"check", nullptr}, {"message", ""}, {"checks", checks}};
  for (const auto& c : checks) {
    if (!c.value("passed", true)) {
      out["verdict"] = "cheat";
      out["check"] = c.value("name", "");
      out["message"] = c.value("message", "");
      break;
    }
  }
  return out;
}

}  // namespace kforge
