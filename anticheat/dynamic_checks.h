#pragma once
// The dynamic and physical anti-cheat layers (anticheat/README.md): what the GPU worker does while
// it verifies and times a candidate so that the verdict holds on every call, and the rules that
// turn what it saw into named checks. Torch-free: the worker (env/gpu/gpu_worker.cpp) does the device
// work and reports evidence; this file holds the config, the speed-of-light arithmetic and the
// composition of the report's `anticheat` section, so they are tested without a GPU.
//
// Checks (the `name` of a check in the report):
//   static               the static scan of kernel.cu (static_checks.h), before anything compiles
//   inputs_unchanged     keyed fingerprints of every input and parameter before and after each
//                        candidate call, verification and timed alike (the reference reads its
//                        own copies, drawn again from the secret key after the candidate ran)
//   buffer_bounds        guard regions around every buffer the candidate gets, filled and
//                        fingerprinted around each call: writes past one's own buffers
//   outputs_written      poison (a NaN or sentinel that changes every trial) left in an output
//   state_same_addresses a trial whose inputs get new values at the previous trial's addresses
//                        (a cache keyed by pointer answers the old question)
//   state_across_calls   a robustness trial failed and one more call on the task's own draws
//                        failed too: the candidate stopped computing after some calls
//   state_new_addresses  a trial with the previous values at new addresses (work done only for
//                        addresses seen before, or keyed on them)
//   timed_calls_verified every timed call gets freshly drawn inputs and poisoned outputs and
//                        workspace outside the timed region, and its outputs are compared with the
//                        reference's on the same inputs after the pair: work done only on checked
//                        calls, counters that detect timing, deferred work, results cached across
//                        calls, races that usually pass
//   kernel_activity      CUPTI activity records of the candidate's calls: every kernel it launched
//                        on the harness stream, as many as the plan launches, nothing else
//   robustness_draws     verification trials with draws beyond the task's own distribution
//                        (scaled, shifted, rows at other scales, each element scaled by 2^k, sparse
//                        spikes), each only where the task's reference is well-conditioned under
//                        it (task dtype against float64): shortcuts that rely on the statistics
//                        of the usual draws (subsampled reductions, expected values, reduced
//                        precision) leave the tolerance; timed calls get such draws at random too
//   speed_of_light       the candidate's median against the task's floor: its minimum bytes over
//                        the device's measured copy bandwidth, its FLOPs over the measured matmul
//                        peak, both times a headroom; faster than physics is flagged, never paid
// The reference's outputs are scrubbed (overwritten with poison) and freed before the next
// candidate call; the reference never reads memory the candidate could have written.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>


namespace kforge {

class YamlNode;

// configs/anticheat.yaml, section `dynamic:`.
struct DynamicCheckConfig {
  bool state_checks = true;          // the two state trials after the verification trials
  bool verify_timed_calls = true;    // fresh inputs, poison and a comparison around every timed call
  bool scrub_reference = true;       // overwrite the reference's outputs before they are freed
  bool kernel_activity = true;       // CUPTI activity check of the candidate's launches
  bool speed_of_light = true;        // flag medians under the physical floor
  bool robustness_draws = true;      // verification trials (and some timed calls) beyond the task's draws
  double robustness_timed_share = 0.25;  // share of timed calls drawn with a robustness variant
  double robustness_margin = 0.5;    // a variant is used where the task-dtype reference stays within
                                     // this share of the tolerance of the float64 reference
  int address_pool = 3;              // buffer sets each call's addresses are picked from at random
  int64_t guard_bytes = 65536;       // guard region before and after every candidate buffer
  double sol_headroom = 1.5;         // measured ceilings x this = the ceilings the floor uses

  static DynamicCheckConfig from_yaml(const YamlNode& node);
};

// Ceilings measured once per GPU worker start.
struct DeviceCeilings {
  double copy_gbps = 0;            // device-to-device copy: bytes read + written per second / 1e9
  double matmul_tflops_fp32 = 0;   // float32 matmul, TF32 off
  double matmul_tflops_fp16 = 0;   // float16 matmul on tensor cores
  bool valid() const { return copy_gbps > 0 && matmul_tflops_fp32 > 0 && matmul_tflops_fp16 > 0; }
};

struct SpeedOfLight {
  double floor_ms = 0;   // max(bytes_ms, flops_ms)
  double bytes_ms = 0;   // min_bytes / (copy bandwidth x headroom)
  double flops_ms = 0;   // flops / (peak x headroom); the fp16 tensor peak for every dtype (a
                         // candidate may use any precision its tolerance allows)
};
SpeedOfLight speed_of_light(double min_bytes, double flops, const DeviceCeilings& ceilings, double headroom);

// One named check's outcome.
struct CheckOutcome {
  std::string name;
  bool passed = true;
  std::string message;  // for the policy: the rule broken, not how the detector works
  nlohmann::json evidence = nlohmann::json::object();
};
nlohmann::json check_to_json(const CheckOutcome& c);

// The report's `anticheat` section from the checks that ran (in order): {"verdict": "clean" or
// "cheat", "check": the first failed check's name or null, "message", "checks": [...]}.
nlohmann::json anticheat_section(const std::vector<nlohmann::json>& checks);

}  // namespace kforge
