#pragma once
// Summary statistics of a set of timing samples (milliseconds).
#include <cstdint>
#include <string>
#include <vector>

namespace kforge {

struct TimingStats {
  int64_t n = 0;
  double median = 0, mean = 0, std = 0, min = 0, max = 0, p10 = 0, p90 = 0;
  double rse = 0;  // relative standard error of the mean: std / sqrt(n) / mean

  // Throws an internal error on an empty sample set.
  static TimingStats from_samples(std::vector<double> samples);
  // "median 1.234 ms (mean 1.240, std 0.010, min 1.220, p10 1.225, p90 1.260, n 120, rse 0.26%)"
  std::string summary() const;
};

// Linear-interpolated quantile q in [0, 1] of sorted samples.
double quantile_sorted(const std::vector<double>& sorted, double q);
// Relative standard error of the mean of samples (0 for fewer than 2).
double relative_standard_error(const std::vector<double>& samples);

}  // namespace kforge
