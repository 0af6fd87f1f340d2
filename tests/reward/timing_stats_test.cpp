#include "reward/timing_stats.h"

#include <cmath>

#include <gtest/gtest.h>

#include "configs/error.h"

using namespace kforge;

TEST(TimingStats, SummarisesKnownSamples) {
  TimingStats s = TimingStats::from_samples({5, 1, 4, 2, 3});
  EXPECT_EQ(s.n, 5);
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_DOUBLE_EQ(s.mean, 3);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 5);
  EXPECT_NEAR(s.std, std::sqrt(2.5), 1e-12);
  EXPECT_DOUBLE_EQ(s.p10, 1.4);
  EXPECT_DOUBLE_EQ(s.p90, 4.6);
  EXPECT_NEAR(s.rse, std::sqrt(2.5) / std::sqrt(5.0) / 3.0, 1e-12);
}

TEST(TimingStats, MedianOfEvenCountInterpolates) {
  EXPECT_DOUBLE_EQ(TimingStats::from_samples({1, 2, 3, 10}).median, 2.5);
}

TEST(TimingStats, SingleSampleHasNoSpread) {
  TimingStats s = TimingStats::from_samples({2.0});
  EXPECT_DOUBLE_EQ(s.std, 0);
  EXPECT_DOUBLE_EQ(s.rse, 0);
  EXPECT_DOUBLE_EQ(s.p90, 2.0);
}

TEST(TimingStats, NoSamplesIsAnError) { EXPECT_THROW(TimingStats::from_samples({}), Error); }

TEST(TimingStats, SummaryNamesEveryFigure) {
  std::string s = TimingStats::from_samples({1, 2, 3}).summary();
  for (const char* part : {"median 2.0000 ms", "mean", "std", "min", "p10", "p90", "n 3", "rse"})
    EXPECT_NE(s.find(part), std::string::npos) << part << " missing from " << s;
}
