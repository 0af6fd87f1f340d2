// Speedup confidence intervals on synthetic timing samples whose true speedup is known.
#include "reward/speedup.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "configs/error.h"

using namespace kforge;

namespace {

// Lognormal timings with a given median. Box-Muller on mt19937_64 (whose output the standard
// fixes), so the samples, and the counts below, are the same with every standard library.
class Timings {
 public:
  explicit Timings(uint64_t seed) : rng_(seed) {}
  std::vector<double> lognormal(int n, double median_ms, double sigma) {
    std::vector<double> v(n);
    for (double& x : v) x = median_ms * std::exp(sigma * normal());
    return v;
  }

 private:
  double uniform() { return (static_cast<double>(rng_() >> 11) + 0.5) / 9007199254740992.0; }
  double normal() { return std::sqrt(-2 * std::log(uniform())) * std::cos(6.283185307179586 * uniform()); }
  std::mt19937_64 rng_;
};

SpeedupOptions with(IntervalMethod m, uint64_t seed = 1) {
  SpeedupOptions o;
  o.method = m;
  o.seed = seed;
  return o;
}

// The fraction of `reps` experiments whose interval contains the true speedup 1.3 (the reference's
// median is 1.3 times the candidate's).
double coverage(IntervalMethod m, int n, double sigma, int reps) {
  Timings t(1000 + n);
  int covered = 0;
  for (int k = 0; k < reps; ++k) {
    auto cand = t.lognormal(n, 2.0, sigma), ref = t.lognormal(n, 2.6, sigma);
    SpeedupEstimate e = estimate_speedup(cand, ref, with(m, k));
    covered += e.lo <= 1.3 && 1.3 <= e.hi;
  }
  return static_cast<double>(covered) / reps;
}

void expect_error(ErrorKind kind, const std::vector<double>& cand, const std::vector<double>& ref, const std::string& mentions,
                  const SpeedupOptions& o = {}) {
  try {
    estimate_speedup(cand, ref, o);
    ADD_FAILURE() << "accepted input that should mention '" << mentions << "'";
  } catch (const Error& e) {
    EXPECT_EQ(kind, e.kind()) << e.what();
    EXPECT_NE(std::string::npos, std::string(e.what()).find(mentions)) << e.what();
  }
}

}  // namespace

TEST(Speedup, PointIsTheRatioOfMediansAndTheIntervalHoldsIt) {
  std::vector<double> cand = {1.0, 1.2, 1.1, 0.9, 1.05, 1.15};  // median 1.075
  std::vector<double> ref = {2.0, 2.2, 2.1, 1.9, 2.3};          // median 2.1
  SpeedupEstimate e = estimate_speedup(cand, ref);
  EXPECT_DOUBLE_EQ(2.1 / 1.075, e.point);
  EXPECT_LE(e.lo, e.point);
  EXPECT_GE(e.hi, e.point);
  EXPECT_EQ(0.95, e.confidence);
  EXPECT_EQ(2000, e.resamples);
  EXPECT_EQ("bootstrap-bca", e.method);
  EXPECT_NE(std::string::npos, e.summary().find("95% bootstrap-bca, 2000 resamples")) << e.summary();
}

TEST(Speedup, BcaIntervalCoversTheTrueRatioAboutNinetyFivePercentOfTheTime) {
  for (int n : {20, 200}) {
    double c = coverage(IntervalMethod::bca, n, 0.2, 200);
    EXPECT_GE(c, 0.90) << "n = " << n;
    EXPECT_LE(c, 0.99) << "n = " << n;
  }
}

TEST(Speedup, PercentileIntervalCoversTheTrueRatioAboutNinetyFivePercentOfTheTime) {
  for (int n : {20, 200}) {
    double c = coverage(IntervalMethod::percentile, n, 0.2, 200);
    EXPECT_GE(c, 0.90) << "n = " << n;
    EXPECT_LE(c, 0.99) << "n = " << n;
  }
}

TEST(Speedup, AnAaComparisonIsNeverJudgedFivePercentFaster) {
  // Candidate and reference from one distribution: the interval holds 1 in ~95% of runs, and its
  // lower bound never clears the 1.05 a "faster" tier needs.
  Timings t(7);
  int holds_one = 0, runs = 0;
  for (int n : {10, 50, 300})
    for (double sigma : {0.02, 0.1, 0.4})
      for (int k = 0; k < 20; ++k, ++runs) {
        auto a = t.lognormal(n, 1.7, sigma), b = t.lognormal(n, 1.7, sigma);
        SpeedupEstimate e = estimate_speedup(a, b, with(IntervalMethod::bca, k));
        EXPECT_LT(e.lo, 1.05) << "n " << n << " sigma " << sigma << ": " << e.summary();
        holds_one += e.lo <= 1.0 && 1.0 <= e.hi;
      }
  EXPECT_GE(static_cast<double>(holds_one) / runs, 0.9) << holds_one << " of " << runs;
}

TEST(Speedup, TheSameSamplesOnBothSidesGiveExactlyOneInsideTheInterval) {
  auto a = Timings(3).lognormal(101, 0.5, 0.3);
  for (IntervalMethod m : {IntervalMethod::bca, IntervalMethod::percentile}) {
    SpeedupEstimate e = estimate_speedup(a, a, with(m));
    EXPECT_EQ(1.0, e.point);
    EXPECT_LT(e.lo, 1.0);
    EXPECT_GT(e.hi, 1.0);
  }
}

TEST(Speedup, AClearTwofoldSpeedupHasALowerBoundNearTwo) {
  Timings t(11);
  auto cand = t.lognormal(100, 1.0, 0.03), ref = t.lognormal(100, 2.0, 0.03);
  SpeedupEstimate e = estimate_speedup(cand, ref);
  EXPECT_NEAR(2.0, e.point, 0.03);
  EXPECT_GT(e.lo, 1.95);
  EXPECT_LT(e.hi, 2.05);
}

TEST(Speedup, NoisierTimingsGiveAWiderInterval) {
  Timings t(5);
  auto quiet = estimate_speedup(t.lognormal(100, 1.0, 0.01), t.lognormal(100, 1.2, 0.01));
  auto noisy = estimate_speedup(t.lognormal(100, 1.0, 0.5), t.lognormal(100, 1.2, 0.5));
  double quiet_width = std::log(quiet.hi / quiet.lo), noisy_width = std::log(noisy.hi / noisy.lo);
  EXPECT_GT(noisy_width, 10 * quiet_width) << quiet.summary() << " vs " << noisy.summary();
  // A real 20% speedup is established under quiet timing, not under the noisy one.
  EXPECT_GT(quiet.lo, 1.05);
  EXPECT_LT(noisy.lo, 1.05);
}

TEST(Speedup, MoreSamplesNarrowTheInterval) {
  Timings t(9);
  auto few = estimate_speedup(t.lognormal(20, 1.0, 0.2), t.lognormal(20, 1.1, 0.2));
  auto many = estimate_speedup(t.lognormal(1000, 1.0, 0.2), t.lognormal(1000, 1.1, 0.2));
  EXPECT_LT(std::log(many.hi / many.lo), 0.5 * std::log(few.hi / few.lo));
}

TEST(Speedup, HigherConfidenceGivesAWiderInterval) {
  Timings t(13);
  auto cand = t.lognormal(80, 1.0, 0.2), ref = t.lognormal(80, 1.1, 0.2);
  SpeedupOptions o90, o99;
  o90.confidence = 0.90;
  o99.confidence = 0.99;
  auto e90 = estimate_speedup(cand, ref, o90), e99 = estimate_speedup(cand, ref, o99);
  EXPECT_LT(e99.lo, e90.lo);
  EXPECT_GT(e99.hi, e90.hi);
}

TEST(Speedup, SameSeedGivesTheSameIntervalAnotherSeedAnother) {
  Timings t(17);
  auto cand = t.lognormal(150, 1.0, 0.2), ref = t.lognormal(150, 1.1, 0.2);
  auto a = estimate_speedup(cand, ref, with(IntervalMethod::bca, 42));
  auto b = estimate_speedup(cand, ref, with(IntervalMethod::bca, 42));
  auto c = estimate_speedup(cand, ref, with(IntervalMethod::bca, 43));
  EXPECT_EQ(a.lo, b.lo);
  EXPECT_EQ(a.hi, b.hi);
  EXPECT_TRUE(a.lo != c.lo || a.hi != c.hi) << "the seed must drive the resampling";
  EXPECT_EQ(a.point, c.point);
  // Sample order does not matter (the sets are sorted first).
  std::vector<double> reversed(cand.rbegin(), cand.rend());
  auto d = estimate_speedup(reversed, ref, with(IntervalMethod::bca, 42));
  EXPECT_EQ(a.lo, d.lo);
  EXPECT_EQ(a.hi, d.hi);
}

TEST(Speedup, ConstantTimingsGiveAPointInterval) {
  std::vector<double> cand(12, 0.5), ref(15, 0.75);
  SpeedupEstimate e = estimate_speedup(cand, ref);
  EXPECT_DOUBLE_EQ(1.5, e.point);
  EXPECT_DOUBLE_EQ(1.5, e.lo);
  EXPECT_DOUBLE_EQ(1.5, e.hi);
}

TEST(Speedup, EmptyTooFewNonPositiveAndNonFiniteSamplesAreRejected) {
  std::vector<double> ok(10, 1.0);
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  expect_error(ErrorKind::internal, {}, ok, "no candidate timing samples");
  expect_error(ErrorKind::internal, ok, {}, "no reference timing samples");
  expect_error(ErrorKind::internal, {1, 2, 3}, ok, "3 candidate timing samples, fewer than the 5");
  auto with_bad = [&](double v) {
    std::vector<double> s = ok;
    s[4] = v;
    return s;
  };
  expect_error(ErrorKind::runtime, with_bad(0.0), ok, "candidate timing sample 4 is 0 ms");
  expect_error(ErrorKind::runtime, ok, with_bad(-1.0), "reference timing sample 4 is -1 ms");
  expect_error(ErrorKind::runtime, with_bad(nan), ok, "candidate timing sample 4 is nan");
  expect_error(ErrorKind::runtime, ok, with_bad(inf), "reference timing sample 4 is inf");
}

TEST(Speedup, InvalidOptionsAreRejected) {
  std::vector<double> ok(10, 1.0);
  SpeedupOptions o;
  o.confidence = 1.0;
  expect_error(ErrorKind::internal, ok, ok, "confidence", o);
  o.confidence = 0.0;
  expect_error(ErrorKind::internal, ok, ok, "confidence", o);
  o = {};
  o.resamples = 10;
  expect_error(ErrorKind::internal, ok, ok, "resamples", o);
  o = {};
  o.min_samples = 1;
  expect_error(ErrorKind::internal, ok, ok, "min_samples", o);
}

// The draw family's statistic (issue 25): a kernel that is fast on some members and honest on the
// others is judged by the others; no median over the mix hides them.
TEST(SlowestMemberSpeedup, AKernelFastOnlyOnTheTasksOwnDrawIsJudgedByItsOtherMembers) {
  Timings t(31);
  std::vector<MemberSamples> m;
  // plain: the shortcut, 3x faster than the reference; five other members: honest, 0.9x
  m.push_back({"plain", t.lognormal(12, 1.0 / 3, 0.01), t.lognormal(12, 1.0, 0.01)});
  for (const char* name : {"scaled", "shifted", "row_scaled", "element_scaled", "outliers"})
    m.push_back({name, t.lognormal(12, 1.0 / 0.9, 0.01), t.lognormal(12, 1.0, 0.01)});
  MemberSpeedup s = estimate_slowest_member_speedup(m);
  EXPECT_NEAR(s.overall.point, 0.9, 0.02);
  EXPECT_NE(s.member, "plain");
  EXPECT_LT(s.overall.lo, 1.0);
  EXPECT_LE(s.overall.lo, s.overall.point);
  EXPECT_GE(s.overall.hi, s.overall.point);
  ASSERT_EQ(s.by_member.size(), 6u);
  EXPECT_NEAR(s.by_member[0].second.point, 3.0, 0.1);
  // Pooled over every call, the median would have been the shortcut's only if most calls were
  // on it; with every member counted alike the slowest one decides.
  std::vector<double> pooled_c, pooled_r;
  for (const auto& x : m) {
    pooled_c.insert(pooled_c.end(), x.candidate_ms.begin(), x.candidate_ms.end());
    pooled_r.insert(pooled_r.end(), x.reference_ms.begin(), x.reference_ms.end());
  }
  EXPECT_GE(estimate_speedup(pooled_c, pooled_r).point, s.overall.point);
}

TEST(SlowestMemberSpeedup, AnAAComparisonOverManyMembersStaysNearOneAndNeverClearsFivePercent) {
  Timings t(32);
  for (int rep = 0; rep < 20; ++rep) {
    std::vector<MemberSamples> m;
    for (int g = 0; g < 8; ++g) m.push_back({"m" + std::to_string(g), t.lognormal(6, 1.0, 0.002), t.lognormal(6, 1.0, 0.002)});
    MemberSpeedup s = estimate_slowest_member_speedup(m);
    EXPECT_GT(s.overall.point, 0.99);
    EXPECT_LT(s.overall.point, 1.005);
    EXPECT_LT(s.overall.lo, 1.05);
    EXPECT_LE(s.overall.lo, 1.0) << "the slowest of 8 equal members is no faster than the reference";
  }
}

TEST(SlowestMemberSpeedup, OneMemberIsTheOrdinaryEstimate) {
  Timings t(33);
  std::vector<double> c = t.lognormal(40, 1.0, 0.05), r = t.lognormal(40, 1.3, 0.05);
  MemberSpeedup s = estimate_slowest_member_speedup({{"plain", c, r}});
  SpeedupEstimate e = estimate_speedup(c, r);
  EXPECT_EQ(s.member, "plain");
  EXPECT_DOUBLE_EQ(s.overall.point, e.point);
  EXPECT_DOUBLE_EQ(s.overall.lo, e.lo);
  EXPECT_DOUBLE_EQ(s.overall.hi, e.hi);
}

TEST(SlowestMemberSpeedup, AMemberWithTooFewSamplesIsTheCallersBug) {
  std::vector<double> ok(10, 1.0);
  try {
    estimate_slowest_member_speedup({{"plain", ok, ok}, {"scaled", {1, 1, 1}, ok}});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::internal);
  }
  EXPECT_THROW(estimate_slowest_member_speedup({}), Error);
}
