#pragma once
// Typed view of configs/eval.yaml: how task references (and later candidates) are checked and
// timed. Defaults live here, beside the fields; the YAML file documents and may override them.
// Loading validates every value once and rejects unknown keys.
#include <cstdint>
#include <map>
#include <string>

namespace kforge {

class YamlNode;

struct Tolerance {
  double atol = 1e-4;
  double rtol = 1e-4;
};

// Tolerance per dtype name ("float32", "float16", "bfloat16"), by named profile.
struct PrecisionConfig {
  std::string profile = "default";
  std::map<std::string, std::map<std::string, Tolerance>> profiles = default_profiles();

  // The active profile's tolerance for a dtype; throws a config error for a dtype it lacks.
  Tolerance for_dtype(const std::string& dtype) const;
  static std::map<std::string, std::map<std::string, Tolerance>> default_profiles();
  static PrecisionConfig from_yaml(const YamlNode& node);
};

// How a function is timed on a device (see env/timing.h for the method).
struct TimingConfig {
  int warmup_count = 3;         // calls before timing starts ...
  double warmup_ms = 25.0;      // ... and at least this much time spent warming up
  int min_reps = 10;            // timed calls, at least
  int max_reps = 500;           // and at most
  double target_rse = 0.005;    // stop once the relative standard error of the mean is below this
  double budget_ms = 3000.0;    // or once this much wall time was spent timing
  bool l2_flush = true;         // write l2_flush_factor x the L2 size before every timed call
  double l2_flush_factor = 2.0;

  static TimingConfig from_yaml(const YamlNode& node);
};

struct DrawConfig {
  // Mixed into every draw key. Tools that must reproduce draws fix it; the evaluator's server
  // replaces 0 with a random salt at start so the policy cannot know its inputs.
  uint64_t salt = 0;
  static DrawConfig from_yaml(const YamlNode& node);
};

struct EvalConfig {
  PrecisionConfig precision;
  TimingConfig timing;
  DrawConfig draws;

  static EvalConfig from_yaml(const YamlNode& node);
  static EvalConfig load(const std::string& path);
};

}  // namespace kforge
