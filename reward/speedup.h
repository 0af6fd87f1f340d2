#pragma once
// The speedup of a candidate over a reference with a bootstrap confidence interval.
//
// Reward tiers ask "is the candidate faster by more than 5 %?" and answer on the interval's lower
// bound, so a lucky run of samples does not pay. The speedup is median(reference) /
// median(candidate) of per-call times; the interval comes from resampling each set with
// replacement (the sets are independent draws of their own distributions), B times, and taking
// quantiles of the resampled ratios: the percentile interval, or BCa (bias-corrected and
// accelerated, Efron 1987), which corrects for the bootstrap distribution's median bias and
// skew. Resampling uses its own seeded generator, so an estimate is a pure function of
// (samples, options) on every machine.
#include <cstdint>
#include <string>
#include <vector>

namespace kforge {

enum class IntervalMethod { percentile, bca };

struct SpeedupOptions {
  double confidence = 0.95;  // two-sided coverage, in (0, 1)
  int resamples = 2000;      // bootstrap replicates B, at least 100
  uint64_t seed = 0x6b666f7267650002ULL;
  IntervalMethod method = IntervalMethod::bca;
  // Fewer samples per set are refused: the bootstrap of a median of a handful of samples
  // under-covers, and an interval that is too narrow would pay for noise.
  int min_samples = 5;
};

struct SpeedupEstimate {
  double point = 0;       // median(reference) / median(candidate); > 1 means the candidate is faster
  double lo = 0, hi = 0;  // the confidence interval of the speedup
  double confidence = 0;
  int resamples = 0;
  std::string method;  // "bootstrap-bca" or "bootstrap-percentile"

  // "1.234x [1.201, 1.270] (95% bootstrap-bca, 2000 resamples)"
  std::string summary() const;
};

// Timing samples in milliseconds, in any order. Throws kforge::Error: runtime for a sample that is
// not a finite positive time (a failed measurement), internal for an empty or too small set or
// invalid options (a caller's bug).
SpeedupEstimate estimate_speedup(const std::vector<double>& candidate_ms, const std::vector<double>& reference_ms,
                                 const SpeedupOptions& options = {});

const char* interval_method_name(IntervalMethod m);  // "bootstrap-bca", "bootstrap-percentile"

}  // namespace kforge
