#include "env/judge/timing.h"

#include <chrono>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

using namespace kforge;

TEST(TimingCpu, MeasuresAKnownDurationAndStopsAtMaxReps) {
  TimingConfig c;
  c.warmup_count = 2;
  c.warmup_ms = 0;
  c.min_reps = 5;
  c.max_reps = 12;
  c.target_rse = 1e-9;  // never reached: max_reps stops it
  int calls = 0;
  TimedRun r = time_function(
      [&] {
        ++calls;
        std::this_thread::sleep_for(std::chrono::milliseconds(3));
      },
      at::kCPU, c);
  EXPECT_EQ(r.stats.n, 12);
  EXPECT_EQ(r.warmup_calls, 2);
  EXPECT_EQ(calls, 14);
  EXPECT_GE(r.stats.median, 3.0);
  EXPECT_LT(r.stats.median, 30.0);
  EXPECT_NE(r.method.find("steady_clock"), std::string::npos);
}

TEST(TimingCpu, StopsEarlyOnceTheNoiseTargetIsMet) {
  TimingConfig c;
  c.warmup_count = 1;
  c.warmup_ms = 0;
  c.min_reps = 10;
  c.max_reps = 100000;
  c.target_rse = 0.5;  // easily met
  TimedRun r = time_function([] { std::this_thread::sleep_for(std::chrono::microseconds(200)); }, at::kCPU, c);
  // It stops as soon as the target is met after min_reps: on a quiet machine at once (n = 10); on a
  // loaded one a few slow sleeps may take some more calls, never anywhere near max_reps.
  EXPECT_GE(r.stats.n, 10);
  EXPECT_LT(r.stats.n, 1000);
  EXPECT_LE(r.stats.rse, c.target_rse);
}

// The sequential rule's hook replaces the noise target: asked from min_reps on with every
// function's samples, it stops the timing when it says so ("decided"); while it says no, an easily
// met noise target does not stop it, and max_reps does ("max_reps").
TEST(TimingCpu, ADecidedHookReplacesTheNoiseTargetAndMaxRepsStaysTheMaximum) {
  TimingConfig c;
  c.warmup_count = 1;
  c.warmup_ms = 0;
  c.min_reps = 6;
  c.max_reps = 40;
  c.target_rse = 0.9;  // met at once: the hook, not the target, decides
  auto sleep = [] { std::this_thread::sleep_for(std::chrono::microseconds(100)); };
  std::vector<size_t> asked;
  std::vector<TimedCall> calls{{sleep, nullptr, nullptr, nullptr}, {sleep, nullptr, nullptr, nullptr}};
  auto runs = time_interleaved(calls, at::kCPU, c, [&](const std::vector<std::vector<double>>& s) {
    EXPECT_EQ(s.size(), 2u);
    EXPECT_EQ(s[0].size(), s[1].size());
    asked.push_back(s[0].size());
    return s[0].size() >= 9;
  });
  EXPECT_EQ(runs[0].stop, "decided");
  EXPECT_EQ(runs[0].stats.n, 9);
  EXPECT_EQ(asked.front(), 6u);  // first asked at min_reps
  EXPECT_NE(runs[0].method.find("sequential rule"), std::string::npos) << runs[0].method;
  auto never = time_interleaved(calls, at::kCPU, c, [](const std::vector<std::vector<double>>&) { return false; });
  EXPECT_EQ(never[0].stop, "max_reps");
  EXPECT_EQ(never[0].stats.n, 40);
  EXPECT_EQ(time_interleaved(calls, at::kCPU, c)[0].stop, "rse");
}

TEST(TimingCpu, WarmUpRunsForItsMinimumTime) {
  TimingConfig c;
  c.warmup_count = 0;
  c.warmup_ms = 20;
  c.min_reps = 3;
  c.max_reps = 3;
  TimedRun r = time_function([] { std::this_thread::sleep_for(std::chrono::milliseconds(2)); }, at::kCPU, c);
  EXPECT_GE(r.warmup_calls, 8);
}

// Rounds carry their stratum (the draw-family member of their inputs): every round is a sample,
// each sample knows its stratum, and a difference between strata is not noise to the stopping
// rule (two strata of 2 ms and 8 ms sleeps, each steady: it stops well before max_reps, where the
// pooled relative standard error, ~60 % / sqrt(n), keeps it going to max_reps).
TEST(TimingCpu, StrataAreKeptPerSampleAndTheirDifferenceIsNotNoise) {
  TimingConfig c;
  c.warmup_count = 1;
  c.warmup_ms = 0;
  c.min_reps = 12;
  c.max_reps = 60;
  c.target_rse = 0.05;
  c.budget_ms = 60000;
  int round = 0;
  bool slow = false;
  std::vector<TimedCall> calls(2);
  calls[0].before = [&] { slow = ++round % 2 == 0; };
  calls[0].stratum = [&] { return slow ? 7 : 3; };
  calls[0].call = [&] { std::this_thread::sleep_for(std::chrono::milliseconds(slow ? 8 : 2)); };
  calls[1].call = [&] { std::this_thread::sleep_for(std::chrono::milliseconds(slow ? 8 : 2)); };
  std::vector<TimedRun> r = time_interleaved(calls, at::kCPU, c);
  ASSERT_EQ(r.size(), 2u);
  ASSERT_EQ(r[0].strata.size(), r[0].samples_ms.size());
  EXPECT_LT(r[0].samples_ms.size(), 60u) << "the 2 ms / 8 ms split counted as noise";
  EXPECT_GE(r[0].samples_ms.size(), 12u);
  for (size_t i = 0; i < r[0].samples_ms.size(); ++i) {
    EXPECT_TRUE(r[0].strata[i] == 3 || r[0].strata[i] == 7);
    if (r[0].strata[i] == 7) {
      EXPECT_GE(r[0].samples_ms[i], 8.0);
    }
  }
  // Without strata the same calls run to max_reps: their pooled spread is ~60 %.
  calls[0].stratum = nullptr;
  round = 0;
  std::vector<TimedRun> p = time_interleaved(calls, at::kCPU, c);
  EXPECT_TRUE(p[0].strata.empty());
  EXPECT_EQ(p[0].samples_ms.size(), 60u);
}
