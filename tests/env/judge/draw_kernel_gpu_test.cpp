// The device draw kernel on a GPU: every dtype and distribution, several million elements over
// many blocks and grid-stride rounds, byte-identical to data_synth's fill_draw; nothing written
// past the end. Skipped (KFORGE_SKIPPED) without a CUDA device.
//
// The context is the device's primary context made current by the CUDA runtime, as in the GPU
// worker (libtorch uses the same one); the drawer reaches it through the driver API.
#include "env/judge/draw_kernel.h"

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include "configs/error.h"
#include "data_synth/task/draw_member.h"
#include "env/judge/check_kernel.h"
#include "tests/support/device_arch.h"

using namespace kforge;
using kforge::testing::device_arch;

namespace {

#define SKIP_WITHOUT_GPU()                                                                               \
  do {                                                                                                   \
    int count_ = 0;                                                                                      \
    if (cudaGetDeviceCount(&count_) != cudaSuccess || count_ == 0) {                                     \
      std::printf("KFORGE_SKIPPED: no CUDA device on this machine; run on a GPU host (ctest -L gpu)\n"); \
      GTEST_SKIP() << "no CUDA device on this machine";                                                  \
    }                                                                                                    \
  } while (0)

#define CUDA_OK(call)                                                      \
  do {                                                                     \
    cudaError_t e_ = (call);                                               \
    ASSERT_EQ(cudaSuccess, e_) << #call << ": " << cudaGetErrorString(e_); \
  } while (0)

constexpr uint8_t kPoison = 0xab;
constexpr size_t kGuardBytes = 4096;  // checked untouched past the last element

struct Case {
  const char* what;
  Draw draw;
  DType dtype;
};

int64_t first_mismatch(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b, size_t bytes, size_t elem) {
  for (size_t i = 0; i < bytes; ++i)
    if (a[i] != b[i]) return static_cast<int64_t>(i / elem);
  return -1;
}

class DrawKernelGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_GPU();
    CUDA_OK(cudaSetDevice(0));
    CUDA_OK(cudaFree(nullptr));  // makes the primary context current in this thread
    CUDA_OK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  }
  void TearDown() override {
    if (stream_) cudaStreamDestroy(stream_);
  }

  // Fills numel elements on the device (poisoned buffer with a guard zone) and on the CPU;
  // asserts the bytes are equal and the guard untouched.
  // With a member: drawn and moved in one pass (fused), or drawn and then moved in place by the
  // member kernel; either way the bytes of the host element code (fill_draw_like_device).
  void expect_same_bytes(DeviceDrawer& drawer, const Case& c, uint64_t key, int64_t numel, const MemberParams& member = {},
                         bool in_place = false) {
    size_t bytes = dtype_size(c.dtype) * static_cast<size_t>(numel);
    void* dev = nullptr;
    CUDA_OK(cudaMalloc(&dev, bytes + kGuardBytes));
    CUDA_OK(cudaMemsetAsync(dev, kPoison, bytes + kGuardBytes, stream_));
    const CUdeviceptr ptr = reinterpret_cast<CUdeviceptr>(dev);
    if (in_place) {
      drawer.fill(c.draw, c.dtype, key, numel, ptr, stream_);
      drawer.apply_member(member, c.dtype, numel, ptr, stream_);
    } else {
      drawer.fill(c.draw, c.dtype, key, numel, ptr, stream_, member);
    }
    std::vector<uint8_t> got(bytes + kGuardBytes);
    CUDA_OK(cudaMemcpyAsync(got.data(), dev, got.size(), cudaMemcpyDeviceToHost, stream_));
    CUDA_OK(cudaStreamSynchronize(stream_));
    CUDA_OK(cudaFree(dev));
    std::vector<uint8_t> want(bytes);
    if (member.kind == 0)
      fill_draw(c.draw, c.dtype, key, numel, want.data());
    else
      fill_draw_like_device(c.draw, c.dtype, key, numel, want.data(), member);
    EXPECT_EQ(-1, first_mismatch(want, got, bytes, dtype_size(c.dtype)))
        << c.what << " (" << numel << " elements, member " << member.kind << (in_place ? " in place" : "")
        << "): first element where the device differs from the host";
    size_t touched = 0;
    for (size_t i = bytes; i < got.size(); ++i) touched += got[i] != kPoison;
    EXPECT_EQ(0u, touched) << c.what << ": bytes written past the last element";
  }

  cudaStream_t stream_ = nullptr;
};

}  // namespace

TEST_F(DrawKernelGpu, EveryDtypeAndDistributionMatchesFillDrawByteForByte) {
  DeviceDrawer drawer(device_arch());
  const std::vector<Case> cases = {
      {"normal f32", Draw::normal(0.37, 1.9), DType::float32},
      {"normal f16", Draw::normal(0.37, 1.9), DType::float16},
      {"normal bf16", Draw::normal(0.37, 1.9), DType::bfloat16},
      {"uniform f32", Draw::uniform(-0.25, 0.75), DType::float32},
      {"uniform f16", Draw::uniform(-0.25, 0.75), DType::float16},
      {"uniform bf16", Draw::uniform(-0.25, 0.75), DType::bfloat16},
      {"randint f32", Draw::randint(-3, 5), DType::float32},
      {"randint f16", Draw::randint(-3, 5), DType::float16},
      {"randint bf16", Draw::randint(-3, 5), DType::bfloat16},
      {"randint i32", Draw::randint(-3, 5), DType::int32},
      {"randint i64", Draw::randint(-3, 5), DType::int64},
      {"randint bool", Draw::randint(0, 2), DType::boolean},
      {"randint i64 full 2^32 range", Draw::randint(-2147483648LL, 2147483648LL), DType::int64},
      {"constant f32", Draw::constant(0.1), DType::float32},
      {"constant f16", Draw::constant(-2.5e-6), DType::float16},
      {"constant bf16", Draw::constant(0.37), DType::bfloat16},
      {"constant i32", Draw::constant(-7), DType::int32},
      {"constant i64", Draw::constant(1e15), DType::int64},
      {"constant bool", Draw::constant(1), DType::boolean},
      // The conversions' edges: float16 overflow to inf and subnormals, float32 subnormals and
      // overflow, bfloat16 far from 1.
      {"uniform f16 overflowing", Draw::uniform(-70000, 70000), DType::float16},
      {"normal f16 subnormal", Draw::normal(0, 2e-5), DType::float16},
      {"uniform f32 subnormal", Draw::uniform(-1e-40, 1e-40), DType::float32},
      {"normal bf16 huge", Draw::normal(1e30, 3e37), DType::bfloat16},
      {"normal f32 overflowing", Draw::normal(0, 1e38), DType::float32},
      // A fused multiply-add instead of draw.cpp's two roundings changes ~2% of these floats.
      {"uniform f32 sensitive to contraction", Draw::uniform(0.1, 2.3), DType::float32},
  };
  const uint64_t key = draw_stream({0x5eed, 3, 0x5a17}, 2);
  // 3M + 7: many blocks, several grid-stride rounds, a ragged tail.
  for (const Case& c : cases) expect_same_bytes(drawer, c, key, 3'000'007);
  // A few elements only (one partial block).
  for (const Case& c : cases) expect_same_bytes(drawer, c, key ^ 0x1234, 5);
}

TEST_F(DrawKernelGpu, DefaultHopperBuildMatchesAndZeroElementsWriteNothing) {
  if (device_arch() != "sm_90") GTEST_SKIP() << "sm_90a CUBINs load on sm_90 only";
  DeviceDrawer drawer;  // sm_90a, what the GPU worker uses on H100/H200
  expect_same_bytes(drawer, {"normal bf16 (sm_90a)", Draw::normal(-1.5, 0.02), DType::bfloat16}, 77, 1'000'003);
  expect_same_bytes(drawer, {"nothing", Draw::normal(0, 1), DType::float32}, 77, 0);
}

TEST_F(DrawKernelGpu, IndicesPastTwoToThe31MatchFillDraw) {
  // Booleans: 2^31 + 4099 bytes, so 32-bit index arithmetic anywhere would show at the end.
  const int64_t numel = (int64_t{1} << 31) + 4099;
  size_t free_bytes = 0, total = 0;
  CUDA_OK(cudaMemGetInfo(&free_bytes, &total));
  if (free_bytes < static_cast<size_t>(numel) + (1u << 30)) GTEST_SKIP() << "needs 3 GiB of free device memory";
  DeviceDrawer drawer(device_arch());
  expect_same_bytes(drawer, {"randint bool past 2^31", Draw::randint(0, 2), DType::boolean}, 0xfeed, numel);
}

TEST_F(DrawKernelGpu, InvalidDrawIsASpecErrorAndLaunchesNothing) {
  DeviceDrawer drawer(device_arch());
  void* dev = nullptr;
  CUDA_OK(cudaMalloc(&dev, 64));
  try {
    drawer.fill(Draw::normal(0, 1), DType::int32, 1, 16, reinterpret_cast<CUdeviceptr>(dev), stream_);
    ADD_FAILURE() << "a normal draw cannot produce int32";
  } catch (const Error& e) {
    EXPECT_EQ(ErrorKind::spec, e.kind());
  }
  EXPECT_THROW(drawer.fill(Draw::normal(0, 1), DType::float32, 1, 16, reinterpret_cast<CUdeviceptr>(dev) + 2, stream_), Error)
      << "a float32 fill at a misaligned address";
  CUDA_OK(cudaFree(dev));
}

// Every member of the draw family on every float dtype, over 3 million elements of a [61, 97, 509]
// argument (rows of 509, 97 channels): the device's fused draw-and-member pass and its in-place
// member kernel both write the host element code's bytes (draw_member.h), so the conditioning's
// approved seeds describe the calls' values.
TEST_F(DrawKernelGpu, EveryMemberDrawnInOnePassOrInPlaceMatchesTheHostElementCode) {
  DeviceDrawer drawer(device_arch());
  const int64_t rows = 61, channels = 97, last = 509, numel = rows * channels * last;
  for (int kind = 1; kind <= 7; ++kind) {
    MemberParams m = member_layout(kind, 0x5eed0000ULL + static_cast<unsigned long long>(kind), last, channels, last);
    m.threshold = outlier_threshold(numel / 256, numel);
    m.add = kind == 2 ? -3.0f : 8.0f;
    m.exponent = 7;
    m.signed_domain = 1;
    for (const Case& c : {Case{"normal f32", Draw::normal(0.5, 2), DType::float32}, Case{"normal f16", Draw::normal(0, 1), DType::float16},
                          Case{"uniform bf16", Draw::uniform(-1, 3), DType::bfloat16}}) {
      expect_same_bytes(drawer, c, 900 + static_cast<uint64_t>(kind), numel, m);
      expect_same_bytes(drawer, c, 900 + static_cast<uint64_t>(kind), numel, m, true);
    }
  }
}

// The fingerprinting draw: the bytes the plain draw (and member) writes, and in the fingerprint word
// what the check kernel's fingerprint of those bytes gives (fingerprint_like_device), for every
// dtype, at element counts whose bytes end mid-word (the tail's byte terms) and over many rounds.
TEST_F(DrawKernelGpu, TheFingerprintingDrawWritesTheSameBytesAndTheirFingerprint) {
  DeviceDrawer drawer(device_arch());
  const MemberParams row = member_layout(3, 77, 1001, 1, 1);  // row_scaled over rows of 1001
  const Case cases[] = {{"normal f32", Draw::normal(0, 1), DType::float32},     {"normal f16", Draw::normal(0, 1), DType::float16},
                        {"uniform bf16", Draw::uniform(0, 1), DType::bfloat16}, {"randint i32", Draw::randint(-9, 9), DType::int32},
                        {"randint i64", Draw::randint(-9, 9), DType::int64},    {"randint bool", Draw::randint(0, 2), DType::boolean}};
  for (const Case& c : cases) {
    for (int64_t numel : {int64_t{1}, int64_t{7}, int64_t{3'000'017}}) {
      const bool member = dtype_is_float(c.dtype) && numel > 1;
      const size_t bytes = dtype_size(c.dtype) * static_cast<size_t>(numel);
      void* dev = nullptr;
      CUDA_OK(cudaMalloc(&dev, bytes));
      void* fp = nullptr;
      CUDA_OK(cudaMalloc(&fp, 8));
      CUDA_OK(cudaMemsetAsync(fp, 0, 8, stream_));
      const uint64_t key = 0x1234567ULL + static_cast<uint64_t>(numel);
      drawer.fill(c.draw, c.dtype, 5, numel, reinterpret_cast<CUdeviceptr>(dev), stream_, member ? row : MemberParams{}, key,
                  reinterpret_cast<CUdeviceptr>(fp));
      std::vector<uint8_t> got(bytes);
      uint64_t got_fp = 0;
      CUDA_OK(cudaMemcpyAsync(got.data(), dev, bytes, cudaMemcpyDeviceToHost, stream_));
      CUDA_OK(cudaMemcpyAsync(&got_fp, fp, 8, cudaMemcpyDeviceToHost, stream_));
      CUDA_OK(cudaStreamSynchronize(stream_));
      CUDA_OK(cudaFree(dev));
      CUDA_OK(cudaFree(fp));
      std::vector<uint8_t> want(bytes);
      fill_draw_like_device(c.draw, c.dtype, 5, numel, want.data(), member ? row : MemberParams{});
      EXPECT_EQ(-1, first_mismatch(want, got, bytes, dtype_size(c.dtype))) << c.what << " (" << numel << " elements)";
      EXPECT_EQ(fingerprint_like_device(want.data(), static_cast<int64_t>(bytes), key), got_fp) << c.what << " (" << numel << " elements)";
    }
  }
}
