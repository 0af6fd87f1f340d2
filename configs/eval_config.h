#pragma once
// Typed view of configs/eval.yaml: how task references (and later candidates) are checked and
// timed. Defaults live here, beside the fields; the YAML file documents and may override them.
// Loading validates every value once and rejects unknown keys.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

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

// How a function is timed on a device (see env/judge/timing.h for the method).
struct TimingConfig {
  int warmup_count = 3;       // calls before timing starts ...
  double warmup_ms = 25.0;    // ... and at least this much time spent warming up
  int min_reps = 20;          // timed calls, at least
  int max_reps = 500;         // and at most
  double target_rse = 0.002;  // stop once the relative standard error of the mean is below this
  double budget_ms = 3000.0;  // or once this much wall time was spent timing
  bool l2_flush = true;       // write l2_flush_factor x the L2 size before every timed call
  double l2_flush_factor = 2.0;
  // The sequential rule (reward/sequential.h): where a request names the speedups its reward is
  // decided at (decide_at), timing stops at the first look whose wide interval settles all of them,
  // from min_reps on; the budget and max_reps stay the maximum and target_rse is not asked.
  bool sequential = true;
  double sequential_confidence = 0.999;  // a look's interval
  double sequential_growth = 1.5;        // looks at min_reps x growth^k pairs
  // With fresh inputs per timed call (anticheat verify_timed_calls): the next call's draw, guards
  // and poison enqueued on a harness stream of their own as soon as the reference's timed call has
  // ended, beside the current call's compare (env/judge/call_bench.h, prepare_ahead); outside every
  // timed event either way. Off: each call prepared on the harness stream just before it.
  bool prepare_ahead = true;
  // Per request, not read from YAML: the speedups (candidate over the reference timed beside it)
  // at which the caller's reward changes (reward/sequential.h, decision_thresholds). Empty: today's rule.
  std::vector<double> decide_at;

  static TimingConfig from_yaml(const YamlNode& node);
  // The same, with `defaults` for the keys the node leaves out (configs/synth.yaml's
  // baseline_timing pins other counts than the evaluator's).
  static TimingConfig from_yaml(const YamlNode& node, const TimingConfig& defaults);
};

// How candidates are verified.
struct VerifyConfig {
  int trials = 5;             // trials in a verify; each with fresh inputs and parameters
  int submit_trials = 10;     // trials in a final evaluation
  int report_mismatches = 5;  // mismatching elements listed per output
  // Trials at each of the task's other shapes (TaskSpec::extra_dims), after the candidate passed at
  // its own; 0: the task's own shape only (the report's `shapes` section says "not_tested").
  int extra_shape_trials = 2;
  static VerifyConfig from_yaml(const YamlNode& node);
};

// Limits on the worker processes that compile and run candidates.
struct WorkerConfig {
  double compile_timeout_s = 30;                            // a compile taking longer kills its worker: `timeout`
  double request_timeout_s = 120;                           // a GPU request (load + verify + time) taking longer: `timeout`
  double start_timeout_s = 120;                             // starting a worker (CUDA context, warm-up)
  int64_t max_workspace_bytes = int64_t{16} << 30;          // all workspace buffers of a candidate together
  int64_t max_file_bytes = int64_t{1} << 30;                // RLIMIT_FSIZE of a worker
  int max_open_files = 1024;                                // RLIMIT_NOFILE of a worker
  int64_t compile_address_space_bytes = int64_t{16} << 30;  // RLIMIT_AS of a compile worker
  bool seccomp = true;                                      // deny process creation, sockets, tracing in workers
  std::string arch;                                         // NVRTC target; "" = the GPU's own (sm_90a on an H200)
  std::string compile_cache_dir;                            // compile results on disk, shared by compile workers ("" = memory only)
  static WorkerConfig from_yaml(const YamlNode& node);
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
  VerifyConfig verify;
  WorkerConfig worker;

  static EvalConfig from_yaml(const YamlNode& node);
  static EvalConfig load(const std::string& path);
};

}  // namespace kforge
