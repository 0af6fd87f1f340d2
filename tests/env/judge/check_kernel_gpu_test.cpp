// The verification's fused kernels on a GPU: for every dtype, a few million elements over many
// blocks and grid-stride rounds with NaN, infinities, poison and far-off values mixed in, the
// device's compare() gives exactly the host copy's counts and maxima, and fingerprint() (and
// fingerprint_copy(), which copies them too) the host copy's value for sizes with and without tail
// bytes. Skipped (KFORGE_SKIPPED) without a GPU.
#include "env/judge/check_kernel.h"

#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

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

// Random element bits for dtype: mostly values near `base`, some NaN/inf/poison.
void fill(std::vector<uint8_t>& out, DType dt, int64_t n, std::mt19937_64& rng, const std::vector<uint8_t>* like, uint64_t poison) {
  size_t es = dtype_size(dt);
  out.assign(n * es, 0);
  std::normal_distribution<float> nd;
  for (int64_t i = 0; i < n; ++i) {
    uint64_t bits = 0;
    if (like && rng() % 4 != 0) {
      std::memcpy(&bits, like->data() + i * es, es);
      if (rng() % 3 == 0) bits ^= 1;  // a last-bit difference: within tolerance or not
    } else {
      float f = nd(rng) * 100.f;
      uint32_t u;
      std::memcpy(&u, &f, 4);
      switch (dt) {
        case DType::float32:
          bits = u;
          break;
        case DType::float16:
          bits = (u >> 16 & 0x8000) | 0x3C00 | (u & 0x3FF);
          break;
        case DType::bfloat16:
          bits = u >> 16;
          break;
        case DType::int32:
          bits = static_cast<uint32_t>(static_cast<int32_t>(f));
          break;
        case DType::int64:
          bits = static_cast<uint64_t>(static_cast<int64_t>(f) * 1000003);
          break;
        case DType::boolean:
          bits = rng() & 1;
          break;
      }
      int special = static_cast<int>(rng() % 50);
      if (special == 0) bits = poison;
      if (dtype_is_float(dt) && special == 1) bits = dt == DType::float32 ? 0x7FC00000u : (dt == DType::float16 ? 0x7E00u : 0x7FC0u);
      if (dtype_is_float(dt) && special == 2) bits = dt == DType::float32 ? 0x7F800000u : (dt == DType::float16 ? 0x7C00u : 0x7F80u);
    }
    std::memcpy(out.data() + i * es, &bits, es);
  }
}

}  // namespace

TEST(CheckKernelGpu, CompareEqualsTheHostCopyForEveryDtype) {
  SKIP_WITHOUT_GPU();
  CUDA_OK(cudaSetDevice(0));
  CUDA_OK(cudaFree(nullptr));  // the primary context, current in this thread
  DeviceChecker checker(device_arch());
  std::mt19937_64 rng(5);
  const int64_t n = 3'000'017;
  for (DType dt : {DType::float32, DType::float16, DType::bfloat16, DType::int32, DType::int64, DType::boolean}) {
    uint64_t poison = poison_bits_for_trial(dt, 9);
    std::vector<uint8_t> ref, cand;
    fill(ref, dt, n, rng, nullptr, poison);
    fill(cand, dt, n, rng, &ref, poison);
    const double atol = dtype_is_float(dt) ? 1e-3 : 0, rtol = dtype_is_float(dt) ? 1e-3 : 0;
    CompareStats want = compare_like_device(dt, cand.data(), ref.data(), n, atol, rtol, poison);
    ASSERT_GT(want.mismatches, 0u) << dtype_name(dt);
    ASSERT_LT(want.mismatches, static_cast<uint64_t>(n)) << dtype_name(dt);
    void *dc = nullptr, *dr = nullptr, *dout = nullptr;
    CUDA_OK(cudaMalloc(&dc, cand.size()));
    CUDA_OK(cudaMalloc(&dr, ref.size()));
    CUDA_OK(cudaMalloc(&dout, 8 * DeviceChecker::kCompareWords));
    CUDA_OK(cudaMemcpy(dc, cand.data(), cand.size(), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(dr, ref.data(), ref.size(), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemset(dout, 0, 8 * DeviceChecker::kCompareWords));
    checker.compare(dt, reinterpret_cast<CUdeviceptr>(dc), reinterpret_cast<CUdeviceptr>(dr), n, atol, rtol, poison,
                    reinterpret_cast<CUdeviceptr>(dout), nullptr);
    uint64_t words[4];
    CUDA_OK(cudaMemcpy(words, dout, sizeof words, cudaMemcpyDeviceToHost));
    CompareStats got = CompareStats::from_words(words);
    EXPECT_EQ(want.mismatches, got.mismatches) << dtype_name(dt);
    EXPECT_EQ(want.unwritten, got.unwritten) << dtype_name(dt);
    EXPECT_EQ(want.max_abs, got.max_abs) << dtype_name(dt);
    EXPECT_EQ(want.max_rel, got.max_rel) << dtype_name(dt);
    std::printf("%-9s n %lld: mismatches %llu, unwritten %llu, max_abs %g, max_rel %g\n", dtype_name(dt), static_cast<long long>(n),
                static_cast<unsigned long long>(got.mismatches), static_cast<unsigned long long>(got.unwritten), got.max_abs, got.max_rel);
    cudaFree(dc);
    cudaFree(dr);
    cudaFree(dout);
  }
}

TEST(CheckKernelGpu, FingerprintEqualsTheHostCopy) {
  SKIP_WITHOUT_GPU();
  CUDA_OK(cudaSetDevice(0));
  CUDA_OK(cudaFree(nullptr));
  DeviceChecker checker(device_arch());
  std::mt19937_64 rng(6);
  for (int64_t nbytes : {int64_t{1}, int64_t{8}, int64_t{1001}, int64_t{16'000'003}}) {
    std::vector<uint8_t> buf(nbytes);
    for (auto& b : buf) b = static_cast<uint8_t>(rng());
    uint64_t key = rng();
    void *d = nullptr, *dout = nullptr;
    CUDA_OK(cudaMalloc(&d, nbytes));
    CUDA_OK(cudaMalloc(&dout, 8));
    CUDA_OK(cudaMemcpy(d, buf.data(), nbytes, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemset(dout, 0, 8));
    checker.fingerprint(reinterpret_cast<CUdeviceptr>(d), nbytes, key, reinterpret_cast<CUdeviceptr>(dout), nullptr);
    uint64_t got = 0;
    CUDA_OK(cudaMemcpy(&got, dout, 8, cudaMemcpyDeviceToHost));
    EXPECT_EQ(fingerprint_like_device(buf.data(), nbytes, key), got) << nbytes;
    cudaFree(d);
    cudaFree(dout);
  }
}

// The copy the inputs reach the candidate's buffers by: every byte copied, and the fingerprint of
// what was copied the host copy's, tails included.
TEST(CheckKernelGpu, FingerprintCopyCopiesEveryByteAndFingerprintsThem) {
  SKIP_WITHOUT_GPU();
  CUDA_OK(cudaSetDevice(0));
  CUDA_OK(cudaFree(nullptr));
  DeviceChecker checker(device_arch());
  std::mt19937_64 rng(8);
  for (int64_t nbytes : {int64_t{3}, int64_t{8}, int64_t{1001}, int64_t{16'000'005}}) {
    std::vector<uint8_t> buf(nbytes), back(nbytes + 8);
    for (auto& b : buf) b = static_cast<uint8_t>(rng());
    uint64_t key = rng();
    void *src = nullptr, *dst = nullptr, *dout = nullptr;
    CUDA_OK(cudaMalloc(&src, nbytes));
    CUDA_OK(cudaMalloc(&dst, nbytes + 8));
    CUDA_OK(cudaMalloc(&dout, 8));
    CUDA_OK(cudaMemcpy(src, buf.data(), nbytes, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemset(dst, 0xA5, nbytes + 8));
    CUDA_OK(cudaMemset(dout, 0, 8));
    checker.fingerprint_copy(reinterpret_cast<CUdeviceptr>(src), reinterpret_cast<CUdeviceptr>(dst), nbytes, key,
                             reinterpret_cast<CUdeviceptr>(dout), nullptr);
    uint64_t got = 0;
    CUDA_OK(cudaMemcpy(&got, dout, 8, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(back.data(), dst, nbytes + 8, cudaMemcpyDeviceToHost));
    EXPECT_EQ(fingerprint_like_device(buf.data(), nbytes, key), got) << nbytes;
    EXPECT_EQ(std::memcmp(back.data(), buf.data(), nbytes), 0) << nbytes;
    for (int k = 0; k < 8; ++k) EXPECT_EQ(back[nbytes + k], 0xA5) << "a byte past the copy was written, at " << nbytes + k;
    cudaFree(src);
    cudaFree(dst);
    cudaFree(dout);
  }
}
