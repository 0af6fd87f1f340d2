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
  c.robustness_timed_share = node.get<double>("robustness_timed_share", c.robustness_timed_share);
  if (!(c.robustness_timed_share >= 0.0 && c.robustness_timed_share <= 0.5))
    node.at("robustness_timed_share")
        .fail("must be between 0 and 0.5 (the share of timed calls drawn with a robustness variant; they are checked but not "
              "counted in the timing, so most calls must be plain ones)");
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
  node.check_no_unknown_keys();
  return c;
}

SpeedOfLight speed_of_light(double min_bytes, double flops, const DeviceCeilings& c, double headroom) {
  KFORGE_CHECK(c.valid(), internal, "speed of light: the device's ceilings were not measured");
  KFORGE_CHECK(headroom >= 1.0, internal, "speed of light: headroom below 1");
  SpeedOfLight s;
  s.bytes_ms = std::max(0.0, min_bytes) / (c.copy_gbps * 1e9 * headroom) * 1e3;
  double peak = std::max(c.matmul_tflops_fp16, c.matmul_tflops_fp32);
  s.flops_ms = std::max(0.0, flops) / (peak * 1e12 * headroom) * 1e3;
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
