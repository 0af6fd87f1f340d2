#pragma once
// Timing a function on a device, as the careful harnesses do (triton do_bench, NVBench):
//   CUDA: warm-up by count and by time; before every timed call the L2 is flushed by writing
//   l2_flush_factor x its size and persisting L2 lines are reset; every call is bracketed by its
//   own CUDA events on the current stream; calls repeat until the relative standard error of the
//   mean is below target_rse (after min_reps) or the budget is spent (or max_reps is reached).
//   CPU: the same loop on a steady clock, without cache flushing.
#include <functional>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "configs/eval_config.h"
#include "reward/timing_stats.h"

namespace kforge {

struct TimedRun {
  std::vector<double> samples_ms;  // every timed call, in order (warm-up calls are not in it)
  std::vector<int> strata;         // per sample, its round's stratum (TimedCall::stratum); empty without strata
  TimingStats stats;
  int warmup_calls = 0;
  double warmup_ms = 0;  // the warm-up's wall time (its calls with their before and after work)
  double l2_flush_bytes = 0;
  std::string method;  // how it was measured, in one line
  std::string stop;    // why timing stopped: rse | decided | budget | max_reps
};

TimedRun time_function(const std::function<void()>& fn, const at::Device& device, const TimingConfig& config);

// Times several functions interleaved call by call (f0, f1, f0, f1, ...), each call with its own
// flush and events, so clock and thermal drift hit them alike. Stops when every function's
// relative standard error is below target (after min_reps each), or on the budget or max_reps.
// The loop's own CUDA calls (flush, events, synchronisations) are checked as KFORGE_CUDA checks a
// harness call beside a candidate's kernels (env/cuda/cuda_check.h): a lost context, which only a
// kernel causes, is the candidate's runtime_error, not kforge's error.
std::vector<TimedRun> time_interleaved(const std::vector<std::function<void()>>& fns, const at::Device& device, const TimingConfig& config);

// A timed call with work around it that stays outside the timed region: `before` runs before the
// L2 flush that precedes the call's start event, `after` after its end event (both enqueue on the
// current stream; either may be empty). Warm-up calls get them too. `stratum`, asked of the first
// function right after its `before`, names the round's stratum (the draw-family member its inputs
// come from): the stopping rule's noise is then the stratified standard error of the mean (each
// stratum's own variance, weighted by its share), so that calls whose inputs differ by design do
// not count as noise; each sample's stratum comes back in TimedRun::strata. Empty: one stratum.
struct TimedCall {
  std::function<void()> call;
  std::function<void()> before;
  std::function<void()> after;
  std::function<int()> stratum;
};
// `decided`, when given, replaces the relative-standard-error target: asked after every batch once
// min_reps rounds are in, with every function's samples so far, it ends the timing by returning
// true (gpu_time.cpp's sequential rule, reward/sequential.h); budget_ms and max_reps stay the maximum.
using Decided = std::function<bool(const std::vector<std::vector<double>>& samples)>;
std::vector<TimedRun> time_interleaved(const std::vector<TimedCall>& calls, const at::Device& device, const TimingConfig& config,
                                       const Decided& decided = {});

// The L2 flush before a timed call: factor x the device's L2 size written (a byte pattern the
// caller varies), then persisting L2 lines reset. A factor of 0 flushes nothing. The GPU worker's
// verification calls use it too, so they are flushed exactly as timed calls are.
class L2Flush {
 public:
  L2Flush(const at::Device& device, double factor);
  void operator()(int pattern, void* stream) const;  // a cudaStream_t
  double bytes() const { return static_cast<double>(buf_.defined() ? buf_.numel() : 0); }
  double factor() const { return factor_; }

 private:
  double factor_ = 0;
  at::Tensor buf_;
};

struct DeviceInfo {
  std::string name;
  std::string torch_version;
  std::string cuda_version;    // the CUDA runtime libtorch was built with ("13.0"); "" on CPU
  std::string driver_version;  // the CUDA driver API level ("13.0"); "" on CPU
  int64_t l2_bytes = 0;
  int sm_count = 0;
};
// Throws a runtime error for a CUDA device when none is present.
DeviceInfo device_info(const at::Device& device);
bool cuda_available();

}  // namespace kforge
