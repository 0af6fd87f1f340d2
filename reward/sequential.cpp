#include "reward/sequential.h"

#include <algorithm>
#include <cmath>

#include "configs/error.h"

namespace kforge {

namespace {

bool positive_time(const std::optional<double>& ms) { return ms && std::isfinite(*ms) && *ms > 0; }

}  // namespace

std::optional<std::vector<double>> decision_thresholds(const RewardConfig& config, const StoredBaseline& baseline) {
  if (config.shaping.log_speedup_weight != 0) return std::nullopt;
  const DecisionConfig& d = config.decision;
  std::vector<double> t{d.eager_threshold};
  // As submission_reward's compile_factor: speedup over torch.compile = factor x speedup over eager.
  std::optional<double> factor;
  if (positive_time(baseline.compile_ms) && positive_time(baseline.eager_ms)) {
    factor = *baseline.compile_ms / *baseline.eager_ms;
  } else if (positive_time(baseline.compile_ms) && config.compile_baseline.allow_unscaled) {
    return std::nullopt;  // the factor is the stored compile time over the eager median measured now
  } else if (config.compile_baseline.when_missing == MissingCompileBaseline::as_eager) {
    factor = 1.0;
  }
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

int64_t sequential_stop(const std::vector<double>& candidate_ms, const std::vector<double>& reference_ms,
                        const std::vector<double>& thresholds, int64_t min_pairs, const SequentialOptions& options) {
  const auto all = static_cast<int64_t>(std::min(candidate_ms.size(), reference_ms.size()));
  for (int64_t n = min_pairs; n < all; n = next_look(n, options.growth)) {
    const std::vector<double> c(candidate_ms.begin(), candidate_ms.begin() + n), r(reference_ms.begin(), reference_ms.begin() + n);
    if (sequential_look(c, r, thresholds, options).decided) return n;
  }
  return all;
}

}  // namespace kforge
