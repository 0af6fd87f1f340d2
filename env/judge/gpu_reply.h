#pragma once
// The GPU worker's reply to an evaluate request, typed: the sections it adds to the evaluation
// report (env/evaluator/EVAL_REPORT.md: `load`, `verify`, `timing`, `profile`, `phases`) and the
// anti-cheat checks it ran. The caller decodes a reply with parse_gpu_eval_reply(), which reads
// every key by name and type and refuses one it does not know (a spec error naming its path);
// to_json() writes each section exactly as the report shows it. Both directions live in
// gpu_reply.cpp, nowhere else.
//
// Measurement details that no reader of kforge interprets stay JSON where the schema documents
// them as such: a check's `evidence`, the robustness conditions, the probe words, `checks_off`.
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "anticheat/dynamic_checks.h"
#include "env/process/worker_protocol.h"
#include "reward/timing_stats.h"

namespace kforge {

// The GPU worker's device, as its hello describes it (and the report's `device`).
struct GpuDevice {
  std::string name, arch, compute_capability;
  int sm_count = 0;
  int64_t l2_bytes = 0, total_memory_bytes = 0;
  int max_threads_per_block = 0;
  std::array<int, 3> max_block_dim{};
  std::array<int64_t, 3> max_grid_dim{};
  int64_t max_dynamic_shared_bytes = 0;
  std::string cuda, driver_api, torch;
};
Json to_json(const GpuDevice& d);
GpuDevice parse_gpu_device(const Json& j, const std::string& path);
// The device of a GPU worker's hello; none when the hello has none (a worker that failed to start).
std::optional<GpuDevice> hello_device(const Json& hello);

struct LoadedKernel {
  std::string name;
  int registers = 0, static_shared_bytes = 0, local_bytes = 0, const_bytes = 0, max_threads_per_block = 0;
};
struct LoadSection {
  std::vector<LoadedKernel> kernels;                            // the kernel kind's (none for an extension)
  bool module_cached = false;                                   // the module or the extension library was loaded by an earlier request
  std::optional<std::vector<std::string>> extension_functions;  // the extension kind: what its library registered
};

struct MismatchExample {
  Json index;                 // the element's multi-index
  Json candidate, reference;  // numbers, or "nan"
};
struct OutputCheck {
  std::string name;
  int64_t numel = 0, mismatches = 0, unwritten = 0;
  double max_abs_error = 0, max_rel_error = 0;
  std::vector<MismatchExample> examples;
};
struct VerifySection {
  bool passed = false;
  int64_t trials_run = 0;
  std::optional<int64_t> failed_trial;
  std::string reason;
  std::vector<std::string> inputs_modified;
  std::vector<OutputCheck> outputs;
  Json robustness;            // {"enabled", "plain_ratio", "variants", "ran"}; null when absent
  std::optional<Json> probe;  // the probe hook's words (GpuVerifyRequest::probe_words)
};

struct SpeedupOfMember {
  std::string member;
  double point = 0, lo = 0, hi = 0;
};
struct SpeedupSection {
  double point = 0, lo = 0, hi = 0, confidence = 0;
  std::string method, member;
  std::vector<SpeedupOfMember> by_member;
};
struct TimingSection {
  TimingStats candidate, reference;
  std::vector<double> candidate_samples_ms, reference_samples_ms;
  SpeedupSection speedup;
  bool outputs_right_after_timing = true;
  bool inputs_fresh_per_call = false;
  std::string method;
  std::string stop;                // why timing stopped: rse | decided | budget | max_reps ("" in older reports)
  std::optional<Json> sequential;  // the sequential rule's thresholds and looks, where it ran (gpu_time.cpp)
  std::optional<Json> probe;
  std::optional<Json> checks_off;  // {"speed_of_light": why}
};

struct ProfiledKernel {
  std::string name;
  uint64_t duration_ns = 0;
  std::array<int64_t, 3> grid{}, block{};
  int64_t registers = 0, shared_bytes = 0, static_shared_bytes = 0, dynamic_shared_bytes = 0, local_bytes_per_thread = 0;
  int64_t stream = 0;
  bool device_launched = false;
  double occupancy = 0;
  int64_t blocks_per_sm = 0;
};
struct ProfileCeilings {
  double dram_gbps = 0, fp32_tflops = 0, tf32_tflops = 0, fp16_tflops = 0;
  std::string method;
};
struct ProfileAchieved {
  double gbps = 0, dram_fraction = 0;
  std::string basis;
  std::optional<double> tflops, fp32_fraction;  // null for a task without a FLOP count
};
struct CounterKernel {
  std::string range;
  std::map<std::string, double> metrics;
};
struct ProfileCounters {
  std::optional<std::string> unavailable;  // set: nothing else is
  std::vector<std::string> metrics, unsupported;
  int64_t passes = 0, calls = 0;
  std::vector<CounterKernel> kernels;
  std::string replay, method;
  double setup_ms = 0, collect_ms = 0, evaluate_ms = 0;
  bool setup_cached = false;
};
struct ProfileSection {
  std::vector<ProfiledKernel> kernels;
  std::optional<std::string> unavailable;  // CUPTI activity could not be used: no span, ceilings, achieved
  std::optional<uint64_t> span_ns, kernel_time_ns;
  std::optional<ProfileCeilings> ceilings;
  std::optional<ProfileAchieved> achieved;
  ProfileCounters counters;
};

struct GpuEvalReply {
  std::optional<LoadSection> load;
  std::optional<VerifySection> verify;
  std::optional<TimingSection> timing;
  std::optional<ProfileSection> profile;
  std::vector<CheckOutcome> anticheat_checks;
  std::optional<std::map<std::string, double>> phases;
};

Json to_json(const LoadSection& s);
Json to_json(const VerifySection& s);
Json to_json(const OutputCheck& c);
Json to_json(const TimingSection& s);
Json to_json(const ProfileSection& s);
LoadSection parse_load_section(const Json& j, const std::string& path);
VerifySection parse_verify_section(const Json& j, const std::string& path);
TimingSection parse_timing_section(const Json& j, const std::string& path);
ProfileSection parse_profile_section(const Json& j, const std::string& path);
CheckOutcome parse_check(const Json& j, const std::string& path);
// A map of measured numbers (`phases`, a counter range's `metrics`): a number per key, or null
// (the worker's NaN or Inf, nlohmann writes them so) read as NaN; written back with NaN/Inf as null.
std::map<std::string, double> parse_measured_map(const Json& j, const std::string& path);
Json measured_map_json(const std::map<std::string, double>& m);

// A candidate's error reply (worker_protocol.h's error_reply) with what the judgement wrote before it
// failed: its `load` and `verify` sections and the named checks that already ran (`anticheat_checks`),
// so a fault while timing still reports the verification and checks that passed.
Json error_reply_after(const Json& partial, const std::string& kind, const std::string& message, bool fatal);

// The sections of a reply (ok or not: an error reply may carry `load`, `verify`, `anticheat_checks`
// and `phases`).
// Throws a spec error naming the first unknown, missing or mistyped key ("reply.verify.passed").
GpuEvalReply parse_gpu_eval_reply(const Json& reply);

}  // namespace kforge
