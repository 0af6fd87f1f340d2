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

// Timing samples of one member of the draw family (data_synth/reference/draw_family.h): the
// candidate's and the reference's calls on that member's draws.
struct MemberSamples {
  std::string member;
  std::vector<double> candidate_ms, reference_ms;
};

// The speedup a candidate is judged by when its calls draw from several members: its slowest
// member's. point = min over members of median(reference) / median(candidate) on that member;
// the interval is the percentile interval of the same minimum over joint resamples of every
// member (each member's two sets resampled with replacement, B times). A kernel fast on some
// members and slow on others is judged by the slow ones: no median over the mix hides them.
// With one member this is estimate_speedup() (BCa where asked). Every member needs
// options.min_samples samples in each set (internal error otherwise: the caller's timing plan).
struct MemberSpeedup {
  SpeedupEstimate overall;                                         // the minimum over members, with its interval
  std::string member;                                              // the member that sets it
  std::vector<std::pair<std::string, SpeedupEstimate>> by_member;  // each member's own estimate
};
MemberSpeedup estimate_slowest_member_speedup(const std::vector<MemberSamples>& members, const SpeedupOptions& options = {});

const char* interval_method_name(IntervalMethod m);  // "bootstrap-bca", "bootstrap-percentile"

}  // namespace kforge
