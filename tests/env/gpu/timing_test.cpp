#include "env/gpu/timing.h"

#include <chrono>
#include <thread>

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

TEST(TimingCpu, WarmUpRunsForItsMinimumTime) {
  TimingConfig c;
  c.warmup_count = 0;
  c.warmup_ms = 20;
  c.min_reps = 3;
  c.max_reps = 3;
  TimedRun r = time_function([] { std::this_thread::sleep_for(std::chrono::milliseconds(2)); }, at::kCPU, c);
  EXPECT_GE(r.warmup_calls, 8);
}

// Rounds the caller marks as not counted are timed and returned apart: they never enter the
// statistics, and max_reps bounds every round, counted or not.
TEST(TimingCpu, UncountedRoundsStayOutOfTheStatistics) {
  TimingConfig c;
  c.warmup_count = 1;
  c.warmup_ms = 0;
  c.min_reps = 5;
  c.max_reps = 30;
  c.target_rse = 1e-9;  // never reached: max_reps stops it
  int round = 0;
  bool slow = false;
  std::vector<TimedCall> calls(2);
  calls[0].before = [&] { slow = ++round % 3 == 0; };  // every third round: a slow one, not counted
  calls[0].counted = [&] { return !slow; };
  calls[0].call = [&] { std::this_thread::sleep_for(std::chrono::milliseconds(slow ? 8 : 1)); };
  calls[1].call = [&] { std::this_thread::sleep_for(std::chrono::milliseconds(slow ? 8 : 1)); };
  std::vector<TimedRun> r = time_interleaved(calls, at::kCPU, c);
  ASSERT_EQ(r.size(), 2u);
  // 30 timed rounds after 1 warm-up round: rounds 2..31, of which 3, 6, ..., 30 are slow (10).
  EXPECT_EQ(r[0].samples_ms.size() + r[0].uncounted_ms.size(), 30u);
  EXPECT_EQ(r[0].uncounted_ms.size(), 10u);
  EXPECT_EQ(r[1].uncounted_ms.size(), 10u);
  EXPECT_EQ(r[0].stats.n, 20);
  for (double ms : r[0].uncounted_ms) EXPECT_GE(ms, 8.0);
  EXPECT_LT(r[0].stats.median, 8.0);  // a median: one fast sleep may oversleep on a loaded machine
  EXPECT_LT(r[1].stats.median, 8.0);
}
