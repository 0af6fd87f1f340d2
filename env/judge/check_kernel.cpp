#include "env/judge/check_kernel.h"

#include <algorithm>
#include <cstring>

#include "configs/error.h"
#include "data_synth/task/draw.h"
#include "env/cuda/cuda_check.h"
#include "env/cuda/cuda_driver.h"
#include "env/judge/harness_nvrtc.h"

// Host versions of the primitives the element code uses; each is one IEEE round-to-nearest
// operation like its device counterpart (this file is compiled with -ffp-contract=off).
namespace kforge {
namespace check_device_code {
typedef unsigned long long kf_u64;
inline double kf_dadd(double x, double y) { return x + y; }
inline double kf_dsub(double x, double y) { return x - y; }
inline double kf_dmul(double x, double y) { return x * y; }
inline double kf_ddiv(double x, double y) { return x / y; }
inline double kf_ll2d(long long x) { return static_cast<double>(x); }
inline kf_u64 kf_d2bits(double d) { return bit_cast<uint64_t>(d); }
inline double kf_bits2d(kf_u64 u) { return bit_cast<double>(u); }
inline float kf_u2f(unsigned int u) { return bit_cast<float>(u); }
// half -> float is exact; the device uses the cvt instruction, the host decodes the bits.
inline float kf_h2f(unsigned short h) {
  unsigned int sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  unsigned int u;
  if (exp == 0x1f) {
    u = sign | 0x7f800000u | (mant << 13);
  } else if (exp != 0) {
    u = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    u = sign;
  } else {  // subnormal: normalise
    int e = -1;
    do {
      ++e;
      mant <<= 1;
    } while ((mant & 0x400u) == 0);
    u = sign | (static_cast<unsigned int>(112 - e) << 23) | ((mant & 0x3ffu) << 13);
  }
  return kf_u2f(u);
}
}  // namespace check_device_code
}  // namespace kforge

#define KF_FN inline
// Each block of element code expanded as host C++ and kept as text (NAME) for NVRTC.
#define KFORGE_CHECK_SHARED_CODE(NAME, ...) \
  namespace kforge {                        \
  namespace check_device_code {             \
  __VA_ARGS__                               \
  }                                         \
  }                                         \
  namespace {                               \
  const char NAME[] = #__VA_ARGS__;         \
  }

KFORGE_CHECK_SHARED_CODE(
    kSharedSource,
    /* dtype codes: 0 float32, 1 float16, 2 bfloat16, 3 int32, 4 int64, 5 bool */
    struct KfCompareAcc {
      kf_u64 mismatches;
      kf_u64 unwritten;
      double max_abs;
      double max_rel;
    };

    KF_FN int kf_is_nan(double d) {
      return (kf_d2bits(d) & 0x7fffffffffffffffULL) > 0x7ff0000000000000ULL;
    } KF_FN int kf_is_finite(double d) {
      return (kf_d2bits(d) & 0x7ff0000000000000ULL) != 0x7ff0000000000000ULL;
    } KF_FN double kf_abs(double d) { return kf_bits2d(kf_d2bits(d) & 0x7fffffffffffffffULL); }

    /* Element i of a buffer of dtype dt, as a double; *bits gets its raw bits, zero-extended. */
    KF_FN double kf_load(int dt, const void* base, kf_u64 i, kf_u64* bits) {
      if (dt == 0) {
        unsigned int u = ((const unsigned int*)base)[i];
        *bits = u;
        return (double)kf_u2f(u);
      }
      if (dt == 1) {
        unsigned short u = ((const unsigned short*)base)[i];
        *bits = u;
        return (double)kf_h2f(u);
      }
      if (dt == 2) {
        unsigned short u = ((const unsigned short*)base)[i];
        *bits = u;
        return (double)kf_u2f(((unsigned int)u) << 16);
      }
      if (dt == 3) {
        unsigned int u = ((const unsigned int*)base)[i];
        *bits = u;
        return kf_ll2d((long long)(int)u);
      }
      if (dt == 4) {
        kf_u64 u = ((const kf_u64*)base)[i];
        *bits = u;
        return kf_ll2d((long long)u);
      }
      unsigned char u = ((const unsigned char*)base)[i];
      *bits = u;
      return (double)u;
    }

    /* The tolerance rule (data_synth/reference/tolerance.h has it for tensors): both finite, outside when
   |c - r| > atol + rtol * |r|; otherwise outside unless the same infinity or both NaN. */
    KF_FN int kf_outside_tolerance(double c, double r, double atol, double rtol) {
      if (kf_is_finite(c) && kf_is_finite(r)) return kf_abs(kf_dsub(c, r)) > kf_dadd(atol, kf_dmul(rtol, kf_abs(r)));
      return !(c == r || (kf_is_nan(c) && kf_is_nan(r)));
    }

    /* One element, loaded: c the candidate's value and cb its bits, r the reference's value. */
    KF_FN void kf_compare_loaded(int dt, double c, kf_u64 cb, double r, double atol, double rtol, kf_u64 poison, KfCompareAcc* acc) {
      int unwritten = cb == poison;
      int bad = kf_outside_tolerance(c, r, atol, rtol);
      if (kf_is_finite(c) && kf_is_finite(r)) { /* the errors reported are over elements finite in both */
        double err = kf_abs(kf_dsub(c, r));
        if (err > acc->max_abs) acc->max_abs = err;
        if (r != 0.0) {
          /* The division only where it may raise the maximum m: with q = RN(RN(m |r|) (1 - 2^-50)) normal,
             err < q gives err < m |r| exactly (each rounding errs by at most 2^-53 relative, and
             (1 + 2^-52)(1 + 2^-53)(1 - 2^-50) < 1), so err / |r| < m and its rounding is at most m: the
             maximum is the same as dividing at every element (check_kernel_test.cpp holds them equal). */
          double ar = kf_abs(r);
          double q = kf_dmul(kf_dmul(acc->max_rel, ar), 0.99999999999999911182158029987);
          if (!(q >= 2.2250738585072014e-308 && err < q)) {
            double rel = kf_ddiv(err, ar);
            if (rel > acc->max_rel) acc->max_rel = rel;
          }
        }
      }
      if (unwritten && dt <= 2) bad = 1;
      acc->unwritten += (kf_u64)unwritten;
      acc->mismatches += (kf_u64)bad;
    }

    KF_FN void kf_compare_elem(int dt, const void* cand, const void* ref, kf_u64 i, double atol, double rtol, kf_u64 poison,
                               KfCompareAcc* acc) {
      kf_u64 cb = 0, rb = 0;
      double c = kf_load(dt, cand, i, &cb);
      double r = kf_load(dt, ref, i, &rb);
      kf_compare_loaded(dt, c, cb, r, atol, rtol, poison, acc);
    }

    KF_FN kf_u64 kf_mix64(kf_u64 z) {
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      return z ^ (z >> 31);
    })

// The fingerprint's term of one word, in a block of its own: the draw kernel's source takes it too
// (DeviceDrawer fingerprints the values it draws in the same pass, DeviceChecker::fingerprint_term_source).
KFORGE_CHECK_SHARED_CODE(
    kFingerprintTermSource,
    KF_FN kf_u64 kf_fp_term(kf_u64 word, kf_u64 index, kf_u64 key) { return kf_mix64((word ^ key) + (index + 1) * 0x9e3779b97f4a7c15ULL); })

namespace kforge {

namespace {

constexpr const char* kDevicePrelude = R"(
typedef unsigned long long kf_u64;
#define KF_FN __device__ __forceinline__
KF_FN double kf_dadd(double x, double y) { return __dadd_rn(x, y); }
KF_FN double kf_dsub(double x, double y) { return __dsub_rn(x, y); }
KF_FN double kf_dmul(double x, double y) { return __dmul_rn(x, y); }
KF_FN double kf_ddiv(double x, double y) { return __ddiv_rn(x, y); }
KF_FN double kf_ll2d(long long x) { return __ll2double_rn(x); }
KF_FN kf_u64 kf_d2bits(double d) { return (kf_u64)__double_as_longlong(d); }
KF_FN double kf_bits2d(kf_u64 u) { return __longlong_as_double((long long)u); }
KF_FN float kf_u2f(unsigned int u) { return __uint_as_float(u); }
KF_FN float kf_h2f(unsigned short h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
)";

constexpr const char* kDeviceKernels = R"(
KF_FN kf_u64 kf_warp_sum(kf_u64 v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  return v;
}
KF_FN double kf_warp_max(double v) {
  for (int o = 16; o > 0; o >>= 1) {
    double w = __shfl_down_sync(0xffffffffu, v, o);
    if (w > v) v = w;
  }
  return v;
}
/* A thread's elements are i, i + stride, i + 2 stride, ...: four at a time with their eight loads
   issued before any of them is used, then one at a time. One element per round left the loop bound
   by memory latency (2.8 ms a call for about 1 GB of outputs on an H100, a quarter of the bandwidth,
   s30). The dtype is a template argument, so that each load is one instruction the compiler may
   hoist. The order elements are taken in changes nothing: the counts are sums, the maxima maxima (the
   relative error's skip bound is exact in every order). */
template <int DT>
KF_FN void kf_compare_range(const void* cand, const void* ref, kf_u64 n, double atol, double rtol, kf_u64 poison,
                            KfCompareAcc* acc) {
  kf_u64 stride = (kf_u64)gridDim.x * blockDim.x;
  kf_u64 i = (kf_u64)blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    kf_u64 cb[4], rb[4];
    double c[4], r[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      c[k] = kf_load(DT, cand, i + k * stride, &cb[k]);
      r[k] = kf_load(DT, ref, i + k * stride, &rb[k]);
    }
#pragma unroll
    for (int k = 0; k < 4; ++k) kf_compare_loaded(DT, c[k], cb[k], r[k], atol, rtol, poison, acc);
  }
  for (; i < n; i += stride) kf_compare_elem(DT, cand, ref, i, atol, rtol, poison, acc);
}
/* out: mismatches, unwritten, max_abs bits, max_rel bits (non-negative doubles order as their bits). */
extern "C" __global__ void kforge_compare(int dt, const void* cand, const void* ref, kf_u64 n, double atol,
                                          double rtol, kf_u64 poison, kf_u64* out) {
  KfCompareAcc acc;
  acc.mismatches = 0; acc.unwritten = 0; acc.max_abs = 0.0; acc.max_rel = 0.0;
  switch (dt) {
    case 0: kf_compare_range<0>(cand, ref, n, atol, rtol, poison, &acc); break;
    case 1: kf_compare_range<1>(cand, ref, n, atol, rtol, poison, &acc); break;
    case 2: kf_compare_range<2>(cand, ref, n, atol, rtol, poison, &acc); break;
    case 3: kf_compare_range<3>(cand, ref, n, atol, rtol, poison, &acc); break;
    case 4: kf_compare_range<4>(cand, ref, n, atol, rtol, poison, &acc); break;
    default: kf_compare_range<5>(cand, ref, n, atol, rtol, poison, &acc); break;
  }
  kf_u64 m = kf_warp_sum(acc.mismatches), u = kf_warp_sum(acc.unwritten);
  double ma = kf_warp_max(acc.max_abs), mr = kf_warp_max(acc.max_rel);
  if ((threadIdx.x & 31) == 0) {
    if (m) atomicAdd(&out[0], m);
    if (u) atomicAdd(&out[1], u);
    if (ma > 0.0) atomicMax(&out[2], kf_d2bits(ma));
    if (mr > 0.0) atomicMax(&out[3], kf_d2bits(mr));
  }
}
/* Fingerprint: 8-byte words (data 8-byte aligned), then the tail bytes as words of their own. With
   copy_to set (8-byte aligned, not overlapping data) the bytes read are also written there: one read
   gives a copy and its fingerprint. One kernel for both, so that a fingerprint taken while copying
   is the same function of the bytes as one taken alone (the before and after fingerprints compare).
   Four words a round with their loads first, as in the compare; the sum does not depend on the order. */
extern "C" __global__ void kforge_fingerprint(const unsigned char* __restrict__ data, unsigned char* __restrict__ copy_to,
                                              kf_u64 nbytes, kf_u64 key, kf_u64* out) {
  kf_u64 words = nbytes / 8, acc = 0;
  const kf_u64* __restrict__ w = (const kf_u64*)data;
  kf_u64* __restrict__ c = (kf_u64*)copy_to;
  kf_u64 stride = (kf_u64)gridDim.x * blockDim.x;
  kf_u64 t = (kf_u64)blockIdx.x * blockDim.x + threadIdx.x;
  kf_u64 i = t;
  for (; i + 3 * stride < words; i += 4 * stride) {
    kf_u64 x[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) x[k] = w[i + k * stride];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      if (c) c[i + k * stride] = x[k];
      acc += kf_fp_term(x[k], i + k * stride, key);
    }
  }
  for (; i < words; i += stride) {
    kf_u64 x = w[i];
    if (c) c[i] = x;
    acc += kf_fp_term(x, i, key);
  }
  if (t == 0)
    for (kf_u64 b = words * 8; b < nbytes; ++b) {
      unsigned char x = data[b];
      if (copy_to) copy_to[b] = x;
      acc += kf_fp_term(x, words + (b - words * 8), key);
    }
  acc = kf_warp_sum(acc);
  if ((threadIdx.x & 31) == 0) atomicAdd(out, acc);
}
)";

int dtype_code(DType t) {
  switch (t) {
    case DType::float32:
      return 0;
    case DType::float16:
      return 1;
    case DType::bfloat16:
      return 2;
    case DType::int32:
      return 3;
    case DType::int64:
      return 4;
    case DType::boolean:
      return 5;
  }
  KFORGE_FAIL(internal, "check kernel: no code for dtype");
}

uint64_t size_mask(DType t) {
  size_t s = dtype_size(t);
  return s >= 8 ? ~uint64_t{0} : ((uint64_t{1} << (8 * s)) - 1);
}

}  // namespace

CompareStats CompareStats::from_words(const uint64_t words[4]) {
  CompareStats s;
  s.mismatches = words[0];
  s.unwritten = words[1];
  s.max_abs = bit_cast<double>(words[2]);
  s.max_rel = bit_cast<double>(words[3]);
  return s;
}

uint64_t poison_bits_for_trial(DType dtype, uint64_t trial) {
  uint64_t h = check_device_code::kf_mix64(trial * 0x9e3779b97f4a7c15ULL + 0x6b666f726765ULL);
  switch (dtype) {
    // Quiet NaNs whose payload is neither 0 (std::nan) nor all ones (the GPU's canonical NaN).
    case DType::float32:
      return 0x7FC00000u | (h % 0x3FFFFEu + 1);
    case DType::float16:
      return 0x7E00u | (h % 0x1FEu + 1);
    case DType::bfloat16:
      return 0x7FC0u | (h % 0x3Eu + 1);
    case DType::int32:
      return 0x5A5A0000u | (h & 0xFFFFu);
    case DType::int64:
      return 0x5A5A5A5A00000000ULL | (h & 0xFFFFFFFFULL);
    case DType::boolean:
      return 0x5A;  // never a valid bool
  }
  return 0;
}

std::string DeviceChecker::source() {
  return std::string(kDevicePrelude) + kSharedSource + "\n" + kFingerprintTermSource + "\n" + kDeviceKernels;
}

std::string DeviceChecker::fingerprint_term_source() { return kFingerprintTermSource; }

std::vector<char> DeviceChecker::compile(const std::string& arch) {
  return compile_harness_cubin(source(), "kforge_check.cu", arch, {"--fmad=false", "--ftz=false", "--prec-div=true", "--std=c++17"},
                               "check kernel");
}

DeviceChecker::DeviceChecker(const std::string& arch)
    : module_(compile(arch), arch, "check kernel", {"kforge_compare", "kforge_fingerprint"}) {}

unsigned DeviceChecker::grid_for(const HarnessModule::Loaded& l, int64_t items) {
  constexpr int64_t kBlock = 256;
  int64_t blocks = std::max<int64_t>(1, (items + kBlock - 1) / kBlock);
  return static_cast<unsigned>(std::min<int64_t>(blocks, int64_t{std::max(1, l.sm_count)} * 8));
}

void DeviceChecker::compare(DType dtype, CUdeviceptr cand, CUdeviceptr ref, int64_t n, double atol, double rtol, uint64_t poison_bits,
                            CUdeviceptr out, CUstream stream) {
  KFORGE_CHECK(n >= 0, internal, "check kernel: negative element count");
  if (n == 0) return;
  const HarnessModule::Loaded& l = module_.in_current_context();
  int dt = dtype_code(dtype);
  void* c = reinterpret_cast<void*>(static_cast<uintptr_t>(cand));
  void* r = reinterpret_cast<void*>(static_cast<uintptr_t>(ref));
  void* o = reinterpret_cast<void*>(static_cast<uintptr_t>(out));
  unsigned long long nn = static_cast<unsigned long long>(n);
  unsigned long long poison = poison_bits & size_mask(dtype);
  void* args[] = {&dt, &c, &r, &nn, &atol, &rtol, &poison, &o};
  cuda_check(cuda_driver().LaunchKernel(l.functions[0], grid_for(l, n), 1, 1, 256, 1, 1, 0, stream, args, nullptr),
             module_.what() + ": cuLaunchKernel (compare)");
}

void DeviceChecker::fingerprint(CUdeviceptr data, int64_t nbytes, uint64_t key, CUdeviceptr out, CUstream stream) {
  // Whole words need 8-byte alignment; fewer than 8 bytes are read byte by byte (a guard's tail).
  KFORGE_CHECK(data % 8 == 0 || nbytes < 8, internal, "check kernel: fingerprint of a buffer not 8-byte aligned");
  launch_fingerprint(data, 0, nbytes, key, out, stream);
}

void DeviceChecker::fingerprint_copy(CUdeviceptr src, CUdeviceptr dst, int64_t nbytes, uint64_t key, CUdeviceptr out, CUstream stream) {
  KFORGE_CHECK((src % 8 == 0 && dst % 8 == 0) || nbytes < 8, internal, "check kernel: fingerprint copy of a buffer not 8-byte aligned");
  KFORGE_CHECK(src + static_cast<CUdeviceptr>(nbytes) <= dst || dst + static_cast<CUdeviceptr>(nbytes) <= src, internal,
               "check kernel: fingerprint copy between overlapping buffers");
  launch_fingerprint(src, dst, nbytes, key, out, stream);
}

void DeviceChecker::launch_fingerprint(CUdeviceptr data, CUdeviceptr copy_to, int64_t nbytes, uint64_t key, CUdeviceptr out,
                                       CUstream stream) {
  KFORGE_CHECK(nbytes >= 0, internal, "check kernel: negative byte count");
  if (nbytes == 0) return;
  const HarnessModule::Loaded& l = module_.in_current_context();
  void* d = reinterpret_cast<void*>(static_cast<uintptr_t>(data));
  void* c = reinterpret_cast<void*>(static_cast<uintptr_t>(copy_to));
  void* o = reinterpret_cast<void*>(static_cast<uintptr_t>(out));
  unsigned long long nb = static_cast<unsigned long long>(nbytes), k = key;
  void* args[] = {&d, &c, &nb, &k, &o};
  cuda_check(cuda_driver().LaunchKernel(l.functions[1], grid_for(l, nbytes / 8), 1, 1, 256, 1, 1, 0, stream, args, nullptr),
             module_.what() + (copy_to ? ": cuLaunchKernel (fingerprint copy)" : ": cuLaunchKernel (fingerprint)"));
}

CompareStats compare_like_device(DType dtype, const void* cand, const void* ref, int64_t n, double atol, double rtol,
                                 uint64_t poison_bits) {
  namespace dc = check_device_code;
  dc::KfCompareAcc acc{0, 0, 0.0, 0.0};
  int dt = dtype_code(dtype);
  uint64_t poison = poison_bits & size_mask(dtype);
  for (int64_t i = 0; i < n; ++i) dc::kf_compare_elem(dt, cand, ref, static_cast<dc::kf_u64>(i), atol, rtol, poison, &acc);
  CompareStats s;
  s.mismatches = acc.mismatches;
  s.unwritten = acc.unwritten;
  s.max_abs = acc.max_abs;
  s.max_rel = acc.max_rel;
  return s;
}

uint64_t fingerprint_like_device(const void* data, int64_t nbytes, uint64_t key) {
  namespace dc = check_device_code;
  const unsigned char* p = static_cast<const unsigned char*>(data);
  uint64_t words = static_cast<uint64_t>(nbytes) / 8, acc = 0;
  for (uint64_t i = 0; i < words; ++i) {
    uint64_t w;
    std::memcpy(&w, p + 8 * i, 8);
    acc += dc::kf_fp_term(w, i, key);
  }
  for (uint64_t b = words * 8; b < static_cast<uint64_t>(nbytes); ++b) acc += dc::kf_fp_term(p[b], words + (b - words * 8), key);
  return acc;
}

}  // namespace kforge
