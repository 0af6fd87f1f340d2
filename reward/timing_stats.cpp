#include "reward/timing_stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

#include "configs/error.h"

namespace kforge {

double quantile_sorted(const std::vector<double>& s, double q) {
  KFORGE_CHECK(!s.empty(), internal, "quantile of no samples");
  double pos = q * static_cast<double>(s.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, s.size() - 1);
  double frac = pos - static_cast<double>(lo);
  return s[lo] + (s[hi] - s[lo]) * frac;
}

static void mean_std(const std::vector<double>& v, double& mean, double& std) {
  mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  std = v.size() > 1 ? std::sqrt(ss / static_cast<double>(v.size() - 1)) : 0.0;
}

double relative_standard_error(const std::vector<double>& samples) {
  if (samples.size() < 2) return 0.0;
  double mean, std;
  mean_std(samples, mean, std);
  return mean > 0 ? std / std::sqrt(static_cast<double>(samples.size())) / mean : 0.0;
}

TimingStats TimingStats::from_samples(std::vector<double> samples) {
  KFORGE_CHECK(!samples.empty(), internal, "timing statistics of no samples");
  TimingStats t;
  t.n = static_cast<int64_t>(samples.size());
  mean_std(samples, t.mean, t.std);
  t.rse = relative_standard_error(samples);
  std::sort(samples.begin(), samples.end());
  t.min = samples.front();
  t.max = samples.back();
  t.median = quantile_sorted(samples, 0.5);
  t.p10 = quantile_sorted(samples, 0.1);
  t.p90 = quantile_sorted(samples, 0.9);
  return t;
}

std::string TimingStats::summary() const {
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(4);
  os << "median " << median << " ms (mean " << mean << ", std " << std << ", min " << min << ", p10 " << p10 << ", p90 " << p90 << ", n "
     << n;
  os.precision(2);
  os << ", rse " << rse * 100 << "%)";
  return os.str();
}

}  // namespace kforge
