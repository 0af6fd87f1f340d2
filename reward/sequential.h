#pragma once
// Deciding the reward's tiers sequentially (issue 31): the timing of a candidate may stop as soon
// as the pairs timed so far settle every decision the reward will make on them, instead of timing
// until the relative standard error reaches its target or the budget is spent.
//
// The reward decides "faster than eager (or torch.compile) by more than t" on the lower bound of
// the speedup's 95 % interval (reward_config.h), a step function of the speedup over eager with
// steps at decision_thresholds(). A look asks a wider interval of the same samples (confidence
// 0.999 by default, percentile bootstrap): when every threshold lies outside it (lo > t, or
// hi <= t), the decision is settled, and the reward's own interval on these samples is on the same
// side of t but for the chance that the wide interval misses. Looks come rarely (at n = first,
// first x growth, first x growth^2, ...: a handful per request, not one per pair), so that chance,
// summed over the looks, stays small. The promise, at most 1 % of decisions different from a run
// to today's stopping rule on the same pairs, is shown by tests/reward/sequential_test.cpp on
// simulated streams and by kforge_eval_bench sequential on the GPU.
//
// Pure functions: no GPU, no clock.
#include <cstdint>
#include <optional>
#include <vector>

#include "reward/episode_reward.h"
#include "reward/speedup.h"

namespace kforge {

struct SequentialOptions {
  double confidence = 0.999;  // two-sided coverage of a look's interval, in (0, 1)
  double growth = 1.5;        // the next look is at n x growth pairs (> 1)
  int resamples = 1000;       // bootstrap replicates of a look's (percentile) interval
};

// The speedups over eager at which the reward's value changes for a correct, timed submission,
// ascending: eager's threshold, and torch.compile's divided by the stored (compile / eager) ratio
// (or taken as eager's under when_missing: as_eager). None when the reward is not a step function
// of that speedup: shaping.log_speedup_weight != 0, or a compile time used unscaled
// (compile_baseline.allow_unscaled with no stored eager time), whose threshold moves with the
// eager median measured now. Then timing runs to today's rule.
std::optional<std::vector<double>> decision_thresholds(const RewardConfig& config, const StoredBaseline& baseline);

struct SequentialLook {
  int64_t pairs = 0;
  SpeedupEstimate interval;  // the look's wide interval of median(reference) / median(candidate)
  bool decided = false;      // every threshold lies outside it
};

// One look at the pairs timed so far (per-call times of the candidate and of the reference).
// Internal error for fewer than SpeedupOptions::min_samples pairs; runtime error for a time that
// is not finite and positive.
SequentialLook sequential_look(const std::vector<double>& candidate_ms, const std::vector<double>& reference_ms,
                               const std::vector<double>& thresholds, const SequentialOptions& options = {});

// The pair count of the look after one at n: ceil(n x growth), at least n + 1.
int64_t next_look(int64_t n, double growth);

// The looks' schedule, one for the GPU worker and the replay: look points at `first` pairs, then
// each next_look of the one before. due(n) says whether n pairs timed reach the next point; when
// they do, the next point becomes the first one past n (points a batch of pairs skipped are not
// looked at twice).
class LookSchedule {
 public:
  LookSchedule(int64_t first, double growth);
  bool due(int64_t n);
  int64_t next() const { return next_; }

 private:
  int64_t next_;
  double growth_;
};

// Where the rule stops on pairs timed to their end (the long run): the first look, from min_pairs
// on and then every x growth, that settles every threshold, else all of them. The proofs replay
// long runs through it (the stopped decision is the reward's on that prefix). The GPU worker keeps
// the same LookSchedule but looks at the first batch boundary at or past each point (timing.cpp
// reads events 8 pairs at a time), so on the same pairs it stops at most one batch later than this.
int64_t sequential_stop(const std::vector<double>& candidate_ms, const std::vector<double>& reference_ms,
                        const std::vector<double>& thresholds, int64_t min_pairs, const SequentialOptions& options = {});

}  // namespace kforge
