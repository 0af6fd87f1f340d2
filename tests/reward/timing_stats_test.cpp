#include "reward/timing_stats.h"

#include <cmath>
#include <iomanip>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "configs/error.h"
#include "configs/file_reader.h"
#include "tests/test_paths.h"

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

TEST(TimingStats, MedianOfEvenCountInterpolates) { EXPECT_DOUBLE_EQ(TimingStats::from_samples({1, 2, 3, 10}).median, 2.5); }

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

// tests/golden/timing_stats.json: samples and the statistics this file's rule gives them, shared
// with the Python copy (tools/dataset/synth_gpu/common.py, tests/tools/test_golden_timing_stats.py). Exact:
// both sides do the same double operations in the same order.
TEST(TimingStats, GoldenVectorsAreReproducedExactly) {
  const std::string path = kforge::testing::source_dir() + "/tests/golden/timing_stats.json";
  const nlohmann::json doc = nlohmann::json::parse(kforge::read_file(path));
  ASSERT_GE(doc["cases"].size(), 10u) << path;
  for (const auto& c : doc["cases"]) {
    const std::string name = c["name"].get<std::string>();
    TimingStats s = TimingStats::from_samples(c["samples"].get<std::vector<double>>());
    EXPECT_EQ(s.n, c["n"].get<int64_t>()) << name;
    const std::pair<const char*, double> got[] = {{"mean", s.mean}, {"std", s.std},       {"rse", s.rse}, {"min", s.min},
                                                  {"max", s.max},   {"median", s.median}, {"p10", s.p10}, {"p90", s.p90}};
    for (const auto& [key, value] : got)
      EXPECT_EQ(value, c[key].get<double>()) << name << " " << key << ": C++ gives " << std::setprecision(17) << value;
  }
}
