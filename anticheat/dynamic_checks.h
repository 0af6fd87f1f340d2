#pragma once
// The dynamic and physical anti-cheat layers (anticheat/README.md): what the GPU worker does while
// it verifies and times a candidate so that the verdict holds on every call, and the rules that
// turn what it saw into named checks. Torch-free: the worker (env/judge/gpu_worker.cpp) does the device
// work and reports evidence; this file holds the config, the speed-of-light arithmetic and the
// composition of the report's `anticheat` section, so they are tested without a GPU.
//
// Checks (the `name` of a check in the report):
//   static               the static scan of kernel.cu (static_checks.h), before anything compiles
//   inputs_unchanged     keyed fingerprints of every input and parameter before and after each
//                        candidate call, verification and timed alike (the reference reads its
//                        own copies, made after the candidate ran and its inputs were fingerprinted)
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
//   library_kernels      (extension kind) every kernel that ran during the candidate's calls was
//                        launched by its own code, as the stack of the launching API call shows
//                        (env/judge/launch_origin.h): ATen's, cuBLAS's and cuDNN's kernels only
//                        where extension_libraries allows them, other libraries' and other
//                        threads' never
//   host_threads         (extension kind) no thread of the candidate's host code outlives a call
//   robustness_draws     a call on a member of the draw family other than the declared draw
//                        (data_synth/reference/draw_family.h: scaled, shifted, row and channel
//                        scales, element scales, outliers, sign flips), each member used only
//                        where the task's reference is well-conditioned under it, failed while a
//                        call on the declared draw passes: shortcuts that rely on the statistics
//                        of one member (subsampled reductions, expected values, reduced
//                        precision) leave the tolerance on another. Every call, verification and
//                        timed, draws a member; the slowest member sets the speedup
//   speed_of_light       the candidate's median against the task's floor: its minimum bytes over
//                        the device's measured copy bandwidth, its FLOPs over the measured peak of
//                        the fastest math its precision contract admits (MathPrecision below),
//                        both times a headroom; faster than physics is flagged, never paid
// The reference's outputs are scrubbed (overwritten with poison) and freed before the next
// candidate call; the reference never reads memory the candidate could have written.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "configs/eval_config.h"

namespace kforge {

class YamlNode;

// configs/anticheat.yaml, section `dynamic:`.
struct DynamicCheckConfig {
  bool state_checks = true;        // the two state trials after the verification trials
  bool verify_timed_calls = true;  // fresh inputs, poison and a comparison around every timed call
  bool scrub_reference = true;     // overwrite the reference's outputs before they are freed
  bool kernel_activity = true;     // CUPTI activity check of the candidate's launches
  bool speed_of_light = true;      // flag medians under the physical floor
  bool robustness_draws = true;    // every call draws from a member of the draw family (off: the declared draw only)
  double robustness_margin = 0.5;  // a variant is used where the task-dtype reference stays within
                                   // this share of the tolerance of the float64 reference
  int address_pool = 3;            // buffer sets each call's addresses are picked from at random
  int64_t guard_bytes = 65536;     // guard region before and after every candidate buffer
  double sol_headroom = 1.5;       // measured ceilings x this = the ceilings the floor uses
  // Libraries whose kernels an extension candidate's host code may launch (library_kernels):
  // any of "aten", "cublas", "cudnn". None by default.
  std::vector<std::string> extension_libraries;

  static DynamicCheckConfig from_yaml(const YamlNode& node);
};

// Whether extension_libraries accepts `name` (aten, cublas, cudnn).
bool is_extension_library(const std::string& name);

// Ceilings measured once per GPU worker start (env/judge/gpu_worker.cpp: the best of 1 GiB copies
// and of 8192^3 at::mm; on the H200: 4.2 TB/s, 51 TFLOP/s float32, 764 TFLOP/s float16,
// tools/bench/RESULTS.md; the TF32 figure is measured at worker start and not recorded yet).
struct DeviceCeilings {
  double copy_gbps = 0;           // device-to-device copy: bytes read + written per second / 1e9
  double matmul_tflops_fp32 = 0;  // float32 matmul, TF32 off
  double matmul_tflops_tf32 = 0;  // float32 matmul with TF32 allowed (tensor cores, 10-bit mantissas)
  double matmul_tflops_fp16 = 0;  // float16 matmul on tensor cores
  bool valid() const { return copy_gbps > 0 && matmul_tflops_fp32 > 0 && matmul_tflops_tf32 > 0 && matmul_tflops_fp16 > 0; }
};

// The fastest math a task's precision contract admits; it picks the peak the FLOP floor divides by
// (the floor must hold for every honest kernel, so it assumes the fastest math that can pass):
//   precision  when                                        peak (H200, measured)
//   float16    a floating argument or output is float16    the float16 tensor-core matmul
//              or bfloat16, or every floating tensor is    (764 TFLOP/s)
//              float32 but max(atol, rtol) >= 2^-11: one
//              rounding to a 10-bit mantissa (TF32, fp16)
//              fits the tolerance
//   float32    every floating tensor is float32 and        max(float32 matmul with TF32 off,
//              max(atol, rtol) < 2^-11 (the default        TF32 matmul / 3, float16 matmul / 3)
//              1e-4 needs about 13.3 bits)                 (max(51, TF32 / 3, 255) TFLOP/s)
//   integer    no floating argument or output              the float32 matmul (51 TFLOP/s)
// A float32 contract of about 13.3 bits is met by split products on tensor cores: 3xTF32
// (CUTLASS's float32 emulation, ~21 bits, a third of the TF32 rate) and the 16-bit split
// (bf16x3, XLA's BF16_BF16_F32_X3, ~16 bits, a third of the 16-bit rate), never by one TF32 or
// 16-bit pass (11 bits); on NVIDIA GPUs the 16-bit split is the faster of the two. A float16 /
// bfloat16 contract (1e-2, about 6.6 bits) is met by one 16-bit pass.
enum class MathPrecision { float32, float16, integer };
const char* math_precision_name(MathPrecision p);  // "float32", "float16", "integer"
// From what the task's function reads and writes (unused arguments left out) and its tolerance.
MathPrecision math_precision(bool any_float32, bool any_16bit_float, const Tolerance& tolerance);
// The peak, in TFLOP/s, the FLOP floor of a task of that precision divides by (table above).
double peak_tflops(const DeviceCeilings& ceilings, MathPrecision precision);

struct SpeedOfLight {
  double floor_ms = 0;     // max(bytes_ms, flops_ms)
  double bytes_ms = 0;     // min_bytes / (copy bandwidth x headroom)
  double flops_ms = 0;     // flops / (peak_tflops x headroom)
  double peak_tflops = 0;  // peak_tflops(ceilings, precision)
  MathPrecision precision = MathPrecision::float32;
};
SpeedOfLight speed_of_light(double min_bytes, double flops, MathPrecision precision, const DeviceCeilings& ceilings, double headroom);

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
