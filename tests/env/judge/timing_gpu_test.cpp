// Timing on a CUDA device: events per call, the L2 flush, the stopping rule. Skipped without a GPU.

#include <gtest/gtest.h>

#include "tests/skip_without_cuda.h"

#include "data_synth/reference/reference.h"
#include "env/judge/candidate_error.h"
#include "env/judge/timing.h"

using namespace kforge;

TEST(TimingGpu, DeviceInfoReadsTheL2AndVersions) {
  KFORGE_SKIP_WITHOUT_CUDA();
  DeviceInfo info = device_info(at::Device(at::kCUDA, 0));
  EXPECT_GT(info.l2_bytes, 1 << 20);
  EXPECT_GT(info.sm_count, 0);
  EXPECT_FALSE(info.cuda_version.empty());
  EXPECT_FALSE(info.name.empty());
}

TEST(TimingGpu, FlushesAtLeastTwiceTheL2AndTimesACopy) {
  KFORGE_SKIP_WITHOUT_CUDA();
  at::Device dev(at::kCUDA, 0);
  DeviceInfo info = device_info(dev);
  at::Tensor src = draw_tensor(Draw::normal(0, 1), {{64 << 20}, DType::float32}, 1, dev);  // 256 MiB
  at::Tensor dst = at::empty_like(src);
  TimingConfig c;
  TimedRun r = time_function([&] { dst.copy_(src); }, dev, c);
  EXPECT_GE(r.l2_flush_bytes, 2.0 * info.l2_bytes);
  EXPECT_NE(r.method.find("L2 flushed"), std::string::npos);
  EXPECT_GE(r.stats.n, c.min_reps);
  EXPECT_LE(r.stats.n, c.max_reps);
  // 512 MiB moved: at most a few TB/s on any GPU, so well above 0.05 ms; and not absurdly slow.
  EXPECT_GT(r.stats.median, 0.05);
  EXPECT_LT(r.stats.median, 50.0);
  EXPECT_TRUE(at::equal(dst, src));
}

TEST(TimingGpu, TimingTheSameThingTwiceAgrees) {
  KFORGE_SKIP_WITHOUT_CUDA();
  at::Device dev(at::kCUDA, 0);
  at::Tensor a = draw_tensor(Draw::normal(0, 1), {{2048, 2048}, DType::float32}, 3, dev);
  at::Tensor out = at::empty_like(a);
  TimingConfig c;
  auto fn = [&] { at::mm_out(out, a, a); };
  double m1 = time_function(fn, dev, c).stats.median, m2 = time_function(fn, dev, c).stats.median;
  EXPECT_LT(std::abs(m1 - m2) / std::min(m1, m2), 0.05) << m1 << " vs " << m2;
}

// A kernel that loses the context while it is timed (here ATen's own index check, a device-side
// assert, standing in for a candidate's fault) is the candidate's runtime_error, fatal: the timing
// loop's synchronisation blames a lost context on the kernels it times, not on kforge. (ctest runs
// each test in its own process: the lost context ends with it.)
TEST(TimingGpu, AContextLostWhileTimingIsTheCandidatesRuntimeError) {
  KFORGE_SKIP_WITHOUT_CUDA();
  at::Device dev(at::kCUDA, 0);
  at::Tensor src = at::zeros({16}, at::TensorOptions().device(dev));
  at::Tensor bad = at::full({1}, int64_t{1} << 20, at::TensorOptions().device(dev).dtype(at::kLong));
  TimingConfig c;
  try {
    time_function([&] { at::index_select(src, 0, bad); }, dev, c);
    ADD_FAILURE() << "timing a kernel that asserts on the device returned";
  } catch (const CandidateError& e) {
    EXPECT_EQ(e.kind, worker_error::runtime_error) << e.what();
    EXPECT_TRUE(e.fatal) << e.what();
  }
}
