#include "reward/sequential.h"

#include <algorithm>
#include <cmath>

#include "configs/error.h"

namespace kforge {

std::optional<std::vector<double>> decision_thresholds(const RewardConfig& config, const StoredBaseline& baseline) {
  if (config.shaping.log_speedup_weight != 0) return std::nullopt;
  const DecisionConfig& d = config.decision;
  std::vector<double> t{d.eager_threshold};
  // As submission_reward: speedup over torch.compile = (stored compile / stored eager) x speedup over eager.
  const StoredCompileRatio stored = stored_compile_ratio(baseline);
  std::optional<double> factor = stored.factor;
  if (!factor && stored.unscaled && config.compile_baseline.allow_unscaled)
    return std::nullopt;  // the factor is the stored compile time over the eager median measured now
  if (!factor && config.compile_baseline.when_missing == MissingCompileBaseline::as_eager) factor = 1.0;
  if (factor) t.push_back(d.compile_threshold / *factor);
  std::sort(t.begin(), t.end());
  t.erase(std::unique(t.begin(), t.end()), t.end());
  return t;
}

SequentialLook sequential_look(const std::vector<double>& candidate_ms, const std::vector<double>& reference_ms,
                               const std::vector<double>& thresholds, const SequentialOptions& options) {
  KFORGE_CHECK(options.confidence > 0 && options.confidence < 1, internal, "a sequential look's confidence is in (0, 1)");
  SpeedupOptions o;
  o.confidence = options.confidence;
  o.resamples = options.resamples;
  o.method = IntervalMethod::percentile;
  SequentialLook look;
  look.pairs = static_cast<int64_t>(std::min(candidate_ms.size(), reference_ms.size()));
  look.interval = estimate_speedup(candidate_ms, reference_ms, o);
  look.decided = std::all_of(thresholds.begin(), thresholds.end(), [&](double t) { return look.interval.lo > t || look.interval.hi <= t; });
  return look;
}

int64_t next_look(int64_t n, double growth) {
  KFORGE_CHECK(growth > 1, internal, "sequential looks grow by a factor above 1");
  return std::max(n + 1, static_cast<int64_t>(std::ceil(static_cast<double>(n) * growth)));
}

LookSchedule::LookSchedule(int64_t first, double growth) : next_(first), growth_(growth) {
  KFORGE_CHECK(growth > 1, internal, "sequential looks grow by a factor above 1");
}

bool LookSchedule::due(int64_t n) {
  if (n < next_) return false;
  while (next_ <= n) next_ = next_look(next_, growth_);
  return true;
}

int64_t sequential_stop(const std::vector<double>& candidate_ms, const std::vector<double>& reference_ms,
                        const std::vector<double>& thresholds, int64_t min_pairs, const SequentialOptions& options) {
  const auto all = static_cast<int64_t>(std::min(candidate_ms.size(), reference_ms.size()));
  for (LookSchedule looks(min_pairs, options.growth); looks.next() < all;) {
    const int64_t n = looks.next();
    looks.due(n);
    const std::vector<double> c(candidate_ms.begin(), candidate_ms.begin() + n), r(reference_ms.begin(), reference_ms.begin() + n);
    if (sequential_look(c, r, thresholds, options).decided) return n;
  }
  return all;
}

}  // namespace kforge
