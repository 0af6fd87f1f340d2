#include "reward/speedup.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "configs/error.h"
#include "reward/timing_stats.h"

namespace kforge {

namespace {

// xoshiro256** seeded through splitmix64: fast, and the same stream on every platform (the
// standard library's distributions are not specified bit for bit).
class Rng {
 public:
  explicit Rng(uint64_t seed) {
    for (auto& s : s_) {
      seed += 0x9e3779b97f4a7c15ULL;
      uint64_t z = seed;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      s = z ^ (z >> 31);
    }
  }
  uint64_t next() {
    uint64_t result = rotl(s_[1] * 5, 7) * 9;
    uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, n) for n < 2^32 by multiply-shift; the bias (n / 2^32) is far below what
  // B = 2000 replicates can resolve.
  uint32_t below(uint32_t n) { return static_cast<uint32_t>(((next() >> 32) * n) >> 32); }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

double median_sorted(const std::vector<double>& s) {
  size_t n = s.size();
  return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

// The median of one resample of `sorted` (n draws with replacement), in O(n) without copying or
// sorting: count how often each sorted position was drawn, then walk the counts to the middle
// rank(s). `counts` is scratch of size n.
double resampled_median(const std::vector<double>& sorted, std::vector<uint32_t>& counts, Rng& rng) {
  const size_t n = sorted.size();
  std::fill(counts.begin(), counts.end(), 0u);
  for (size_t j = 0; j < n; ++j) ++counts[rng.below(static_cast<uint32_t>(n))];
  const size_t k_lo = (n - 1) / 2, k_hi = n / 2;  // 0-based middle ranks (equal for odd n)
  size_t seen = 0, i = 0;
  while (seen + counts[i] <= k_lo) seen += counts[i++];
  double lo = sorted[i];
  while (seen + counts[i] <= k_hi) seen += counts[i++];
  return 0.5 * (lo + sorted[i]);
}

// The median of sorted without element `drop` (for the jackknife).
double median_without(const std::vector<double>& s, size_t drop) {
  const size_t m = s.size() - 1;
  auto at = [&](size_t k) { return s[k < drop ? k : k + 1]; };
  return m % 2 ? at(m / 2) : 0.5 * (at(m / 2 - 1) + at(m / 2));
}

double normal_cdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

// Acklam's rational approximation of the normal quantile, refined by one Halley step (relative
// error ~1e-15).
double normal_quantile(double p) {
  static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,  -2.759285104469687e+02,
                             1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02, 6.680131188771972e+01,
                             -1.328068155288572e+01};
  static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                             -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00, 3.754408661907416e+00};
  const double p_low = 0.02425;
  double x;
  if (p < p_low) {
    double q = std::sqrt(-2 * std::log(p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  } else if (p <= 1 - p_low) {
    double q = p - 0.5, r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
  } else {
    double q = std::sqrt(-2 * std::log(1 - p));
    x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  double e = normal_cdf(x) - p;
  double u = e * 2.5066282746310002 * std::exp(x * x / 2);  // sqrt(2 pi)
  return x - u / (1 + x * u / 2);
}

void check_samples(const std::vector<double>& v, const char* which, int min_samples) {
  KFORGE_CHECK(!v.empty(), internal, "speedup: no " << which << " timing samples");
  KFORGE_CHECK(
      static_cast<int64_t>(v.size()) >= min_samples, internal,
      "speedup: " << v.size() << " " << which << " timing samples, fewer than the " << min_samples << " a confidence interval needs");
  KFORGE_CHECK(v.size() < (size_t{1} << 31), internal, "speedup: too many " << which << " samples (" << v.size() << ")");
  for (size_t i = 0; i < v.size(); ++i)
    KFORGE_CHECK(std::isfinite(v[i]) && v[i] > 0, runtime,
                 "speedup: " << which << " timing sample " << i << " is " << v[i] << " ms, not a positive time");
}

// Efron's acceleration for a two-sample statistic from the jackknife: each sample's
// leave-one-out values give its empirical influence values l = (n - 1)(mean - theta_(i)), and
// a = sum_g sum_i l^3 / n_g^3 / (6 (sum_g sum_i l^2 / n_g^2)^1.5).
double acceleration(const std::vector<double>& cand, const std::vector<double>& ref) {
  const double log_med_c = std::log(median_sorted(cand)), log_med_r = std::log(median_sorted(ref));
  double num = 0, den = 0;
  for (int g = 0; g < 2; ++g) {
    const std::vector<double>& s = g == 0 ? cand : ref;
    const double n = static_cast<double>(s.size());
    std::vector<double> theta(s.size());
    for (size_t i = 0; i < s.size(); ++i)
      theta[i] = g == 0 ? log_med_r - std::log(median_without(s, i)) : std::log(median_without(s, i)) - log_med_c;
    double mean = 0;
    for (double t : theta) mean += t;
    mean /= n;
    double s2 = 0, s3 = 0;
    for (double t : theta) {
      double l = (n - 1) * (mean - t);
      s2 += l * l;
      s3 += l * l * l;
    }
    num += s3 / (n * n * n);
    den += s2 / (n * n);
  }
  return den > 0 ? num / (6 * std::pow(den, 1.5)) : 0.0;
}

}  // namespace

const char* interval_method_name(IntervalMethod m) { return m == IntervalMethod::bca ? "bootstrap-bca" : "bootstrap-percentile"; }

std::string SpeedupEstimate::summary() const {
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(3);
  os << point << "x [" << lo << ", " << hi << "] (";
  os.precision(0);
  os << confidence * 100 << "% " << method << ", " << resamples << " resamples)";
  return os.str();
}

SpeedupEstimate estimate_speedup(const std::vector<double>& candidate_ms, const std::vector<double>& reference_ms,
                                 const SpeedupOptions& o) {
  KFORGE_CHECK(o.confidence > 0 && o.confidence < 1, internal,
               "speedup: confidence must lie strictly between 0 and 1, got " << o.confidence);
  KFORGE_CHECK(o.resamples >= 100, internal, "speedup: at least 100 bootstrap resamples are needed, got " << o.resamples);
  KFORGE_CHECK(o.min_samples >= 2, internal, "speedup: min_samples must be at least 2, got " << o.min_samples);
  check_samples(candidate_ms, "candidate", o.min_samples);
  check_samples(reference_ms, "reference", o.min_samples);

  std::vector<double> cand = candidate_ms, ref = reference_ms;
  std::sort(cand.begin(), cand.end());
  std::sort(ref.begin(), ref.end());

  // Work on the log of the speedup: a difference of log medians, symmetric in the two sets.
  // Percentile quantiles commute with the monotone log; BCa's jackknife behaves better there.
  const double theta_hat = std::log(median_sorted(ref)) - std::log(median_sorted(cand));
  const int B = o.resamples;
  std::vector<double> theta(B);
  {
    Rng rng(o.seed);
    std::vector<uint32_t> counts_c(cand.size()), counts_r(ref.size());
    for (int b = 0; b < B; ++b) {
      double mc = resampled_median(cand, counts_c, rng);
      double mr = resampled_median(ref, counts_r, rng);
      theta[b] = std::log(mr) - std::log(mc);
    }
  }
  std::sort(theta.begin(), theta.end());

  const double alpha = 1 - o.confidence;
  double q_lo = alpha / 2, q_hi = 1 - alpha / 2;
  if (o.method == IntervalMethod::bca) {
    // Bias correction from the share of replicates below the estimate; ties (frequent: a median
    // of resamples is often the sample median itself) count half.
    auto [first_eq, last_eq] = std::equal_range(theta.begin(), theta.end(), theta_hat);
    double below = static_cast<double>(first_eq - theta.begin()) + 0.5 * static_cast<double>(last_eq - first_eq);
    double share = std::clamp(below / B, 0.5 / B, 1 - 0.5 / B);
    double z0 = normal_quantile(share);
    double a = acceleration(cand, ref);
    auto adjust = [&](double q) {
      double z = z0 + normal_quantile(q);
      double denom = 1 - a * z;
      // A degenerate acceleration would flip the interval; keep the percentile end instead.
      return denom > 0 ? normal_cdf(z0 + z / denom) : q;
    };
    q_lo = adjust(q_lo);
    q_hi = adjust(q_hi);
  }

  SpeedupEstimate e;
  e.point = median_sorted(ref) / median_sorted(cand);
  e.lo = std::exp(quantile_sorted(theta, q_lo));
  e.hi = std::exp(quantile_sorted(theta, q_hi));
  e.confidence = o.confidence;
  e.resamples = B;
  e.method = interval_method_name(o.method);
  return e;
}

MemberSpeedup estimate_slowest_member_speedup(const std::vector<MemberSamples>& members, const SpeedupOptions& o) {
  KFORGE_CHECK(!members.empty(), internal, "speedup: no member of the draw family was timed");
  MemberSpeedup out;
  for (const auto& m : members) out.by_member.push_back({m.member, estimate_speedup(m.candidate_ms, m.reference_ms, o)});
  size_t slowest = 0;
  for (size_t i = 1; i < out.by_member.size(); ++i)
    if (out.by_member[i].second.point < out.by_member[slowest].second.point) slowest = i;
  out.member = out.by_member[slowest].first;
  if (members.size() == 1) {
    out.overall = out.by_member[0].second;
    return out;
  }
  // The minimum over members, resampled jointly: each replicate resamples every member's two sets.
  std::vector<std::vector<double>> cand, ref;
  for (const auto& m : members) {
    cand.push_back(m.candidate_ms);
    ref.push_back(m.reference_ms);
    std::sort(cand.back().begin(), cand.back().end());
    std::sort(ref.back().begin(), ref.back().end());
  }
  const int B = o.resamples;
  std::vector<double> theta(B);
  Rng rng(o.seed);
  std::vector<uint32_t> counts;
  for (int b = 0; b < B; ++b) {
    double worst = std::numeric_limits<double>::infinity();
    for (size_t g = 0; g < members.size(); ++g) {
      counts.resize(cand[g].size());
      double mc = resampled_median(cand[g], counts, rng);
      counts.resize(ref[g].size());
      double mr = resampled_median(ref[g], counts, rng);
      worst = std::min(worst, std::log(mr) - std::log(mc));
    }
    theta[b] = worst;
  }
  std::sort(theta.begin(), theta.end());
  const double alpha = 1 - o.confidence;
  out.overall.point = out.by_member[slowest].second.point;
  out.overall.lo = std::min(out.overall.point, std::exp(quantile_sorted(theta, alpha / 2)));
  out.overall.hi = std::max(out.overall.point, std::exp(quantile_sorted(theta, 1 - alpha / 2)));
  out.overall.confidence = o.confidence;
  out.overall.resamples = B;
  out.overall.method = "bootstrap-percentile, slowest of " + std::to_string(members.size()) + " members";
  return out;
}

}  // namespace kforge
