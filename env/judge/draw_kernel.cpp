#include "env/judge/draw_kernel.h"

#include "env/cuda/cuda_check.h"
#include "env/cuda/cuda_driver.h"
#include "env/judge/check_kernel.h"
#include "env/judge/harness_nvrtc.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <cuda_runtime_api.h>

#include "configs/error.h"

// Host versions of the primitives the element code uses. Each is one IEEE round-to-nearest
// operation, like its device counterpart in kDevicePrelude; this file is compiled with
// -ffp-contract=off (env/draw_kernel.cmake) so a multiply and an add never fuse.
namespace kforge {
namespace draw_device_code {
inline double kf_dadd(double x, double y) { return x + y; }
inline double kf_dsub(double x, double y) { return x - y; }
inline double kf_dmul(double x, double y) { return x * y; }
inline double kf_u2d(unsigned long long x) { return static_cast<double>(x); }
inline float kf_d2f(double x) { return static_cast<float>(x); }
inline float kf_fadd(float x, float y) { return x + y; }
inline unsigned int kf_f2u(float f) { return bit_cast<uint32_t>(f); }
inline float kf_u2f(unsigned int u) { return bit_cast<float>(u); }
}  // namespace draw_device_code
}  // namespace kforge

// The element code, written once: expanded here as host C++ and kept as text for NVRTC. (The text
// is one line, comments stripped by the preprocessor; it may hold no # directive.)
#define KF_FN inline
#define KFORGE_DRAW_SHARED_CODE(...)         \
  namespace kforge {                         \
  namespace draw_device_code {               \
  __VA_ARGS__                                \
  }                                          \
  }                                          \
  namespace {                                \
  const char kSharedSource[] = #__VA_ARGS__; \
  }

KFORGE_DRAW_SHARED_CODE(
    typedef unsigned long long kf_u64; typedef long long kf_i64; typedef unsigned int kf_u32;

    /* The launch's parameters, laid out alike by the host compiler and NVRTC (naturally aligned). */
    struct KfDrawParams {
      kf_u64 stream;    /* the argument's stream key */
      kf_u64 range;     /* randint: high - low, as draw.cpp computes it */
      kf_i64 low_int;   /* randint: low; constant: the value, as int64 (integer dtypes) */
      double a;         /* normal: mean; uniform, randint: low; constant: value */
      double b;         /* normal: std; uniform: high - low, computed on the host */
      double ih_mean;   /* Irwin-Hall mean 131070 */
      double ih_inv_sd; /* 1 / sqrt((65536^2 - 1) / 3), computed on the host */
      int dist;         /* 0 normal, 1 uniform, 2 randint, 3 constant */
      int pad;
    };

    KF_FN kf_u64 kf_mix64(kf_u64 z) {
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      return z ^ (z >> 31);
    }

    KF_FN kf_u64 kf_bits(const KfDrawParams& p, kf_u64 i) { return kf_mix64(p.stream + (i + 1) * 0x9e3779b97f4a7c15ULL); }

    /* draw.cpp's draw_double, one rounded operation at a time in the same order. */
    KF_FN double kf_draw_double(const KfDrawParams& p, kf_u64 bits) {
      if (p.dist == 0) {
        kf_u64 s = (bits & 0xffff) + ((bits >> 16) & 0xffff) + ((bits >> 32) & 0xffff) + (bits >> 48);
        double z = kf_dmul(kf_dsub(kf_u2d(s), p.ih_mean), p.ih_inv_sd);
        return kf_dadd(p.a, kf_dmul(p.b, z));
      }
      if (p.dist == 1) {
        double u = kf_dmul(kf_u2d(bits >> 40), 1.0 / 16777216.0);
        return kf_dadd(p.a, kf_dmul(p.b, u));
      }
      if (p.dist == 2) return kf_dadd(p.a, kf_u2d(((bits >> 32) * p.range) >> 32));
      return p.a;
    }

    /* draw.cpp's draw_int; the add is done unsigned (wraps as the CPU's int64 add does, without UB). */
    KF_FN kf_i64 kf_draw_int(const KfDrawParams& p, kf_u64 bits) {
      if (p.dist == 3) return p.low_int;
      return (kf_i64)((kf_u64)p.low_int + (((bits >> 32) * p.range) >> 32));
    }

    /* draw.cpp's float_to_bfloat16_bits. */
    KF_FN unsigned short kf_float_to_bf16(float f) {
      kf_u32 u = kf_f2u(f);
      if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40);
      u += 0x7fffu + ((u >> 16) & 1u);
      return (unsigned short)(u >> 16);
    }

    /* draw.cpp's float_to_half_bits. */
    KF_FN unsigned short kf_float_to_half(float f) {
      kf_u32 x = kf_f2u(f);
      kf_u32 sign = (x >> 16) & 0x8000u;
      kf_u32 absx = x & 0x7fffffffu;
      if (absx > 0x7f800000u) return (unsigned short)(sign | 0x7e00u);
      if (absx >= 0x477ff000u) return (unsigned short)(sign | 0x7c00u);
      if (absx < 0x38800000u) {
        kf_u32 ru = kf_f2u(kf_fadd(kf_u2f(absx), 0.5f));
        return (unsigned short)(sign | (ru - 0x3f000000u));
      }
      kf_u32 mant_odd = (absx >> 13) & 1u;
      absx += 0xc8000fffu + mant_odd;
      return (unsigned short)(sign | (absx >> 13));
    }

    KF_FN float kf_elem_float32(const KfDrawParams& p, kf_u64 i) {
      return kf_d2f(kf_draw_double(p, kf_bits(p, i)));
    } KF_FN unsigned short kf_elem_float16(const KfDrawParams& p, kf_u64 i) {
      return kf_float_to_half(kf_elem_float32(p, i));
    } KF_FN unsigned short kf_elem_bfloat16(const KfDrawParams& p, kf_u64 i) {
      return kf_float_to_bf16(kf_elem_float32(p, i));
    } KF_FN int kf_elem_int32(const KfDrawParams& p, kf_u64 i) {
      return (int)kf_draw_int(p, kf_bits(p, i));
    } KF_FN kf_i64 kf_elem_int64(const KfDrawParams& p, kf_u64 i) {
      return kf_draw_int(p, kf_bits(p, i));
    } KF_FN unsigned char kf_elem_boolean(const KfDrawParams& p, kf_u64 i) { return kf_draw_int(p, kf_bits(p, i)) != 0; })

namespace kforge {

namespace {

using draw_device_code::KfDrawParams;
static_assert(sizeof(KfDrawParams) == 64, "KfDrawParams must have the layout NVRTC gives it");

// Device primitives: one IEEE round-to-nearest operation each (the _rn intrinsics are never
// contracted into FMAs; --fmad=false and --ftz=false besides).
constexpr const char* kDevicePrelude = R"(
#define KF_FN __device__ __forceinline__
__device__ __forceinline__ double kf_dadd(double x, double y) { return __dadd_rn(x, y); }
__device__ __forceinline__ double kf_dsub(double x, double y) { return __dsub_rn(x, y); }
__device__ __forceinline__ double kf_dmul(double x, double y) { return __dmul_rn(x, y); }
__device__ __forceinline__ double kf_u2d(unsigned long long x) { return __ull2double_rn(x); }
__device__ __forceinline__ float kf_d2f(double x) { return __double2float_rn(x); }
__device__ __forceinline__ float kf_fadd(float x, float y) { return __fadd_rn(x, y); }
__device__ __forceinline__ float kf_fmul(float x, float y) { return __fmul_rn(x, y); }
__device__ __forceinline__ unsigned long long kf_d2u_rz(double x) { return __double2ull_rz(x); }
__device__ __forceinline__ unsigned int kf_umulhi(unsigned int a, unsigned int b) { return __umulhi(a, b); }
__device__ __forceinline__ unsigned int kf_f2u(float f) { return __float_as_uint(f); }
__device__ __forceinline__ float kf_u2f(unsigned int u) { return __uint_as_float(u); }
)";

// One grid-stride kernel per dtype; each thread writes elements i, i + stride, ... so a warp's
// stores are contiguous. A float kernel applies the draw family's member `m` (kind 0: none) to
// each value it draws, in the same pass; kforge_member_* apply one in place to values drawn before.
constexpr const char* kDeviceKernels = R"(
#define KF_DRAW_KERNEL(DT, T)                                                                           \
  extern "C" __global__ void kforge_draw_##DT(KfDrawParams p, kforge::MemberParams m, kf_u64 numel, T* out) { \
    kf_u64 stride = (kf_u64)gridDim.x * blockDim.x;                                                     \
    for (kf_u64 i = (kf_u64)blockIdx.x * blockDim.x + threadIdx.x; i < numel; i += stride)              \
      out[i] = KF_MEMBER_##DT(kf_elem_##DT(p, i));                                                      \
  }
#define KF_MEMBER_KERNEL(DT, T)                                                                         \
  extern "C" __global__ void kforge_member_##DT(kforge::MemberParams m, kf_u64 numel, T* data) {        \
    kf_u64 stride = (kf_u64)gridDim.x * blockDim.x;                                                     \
    for (kf_u64 i = (kf_u64)blockIdx.x * blockDim.x + threadIdx.x; i < numel; i += stride)              \
      data[i] = kf_member_##DT(m, i, data[i]);                                                          \
  }
#define KF_MEMBER_float32(x) (m.kind ? kf_member_float32(m, i, x) : x)
#define KF_MEMBER_float16(x) (m.kind ? kf_member_float16(m, i, x) : x)
#define KF_MEMBER_bfloat16(x) (m.kind ? kf_member_bfloat16(m, i, x) : x)
#define KF_MEMBER_int32(x) x
#define KF_MEMBER_int64(x) x
#define KF_MEMBER_boolean(x) x
KF_DRAW_KERNEL(float32, float)
KF_DRAW_KERNEL(float16, unsigned short)
KF_DRAW_KERNEL(bfloat16, unsigned short)
KF_DRAW_KERNEL(int32, int)
KF_DRAW_KERNEL(int64, kf_i64)
KF_DRAW_KERNEL(boolean, unsigned char)
KF_MEMBER_KERNEL(float32, float)
KF_MEMBER_KERNEL(float16, unsigned short)
KF_MEMBER_KERNEL(bfloat16, unsigned short)
/* The draw (and member) with the fingerprint of the bytes written, in the same pass: each thread
   builds whole 8-byte words (8 / sizeof(T) elements), stores each as one word and adds its term
   (out 8-byte aligned); the tail bytes past the last whole word are terms of their own, as the
   check kernel's fingerprint takes them (check_kernel.h). The sum goes to *fp (zeroed). */
#define KF_DRAW_FP_KERNEL(DT, T)                                                                                    \
  extern "C" __global__ void kforge_draw_fp_##DT(KfDrawParams p, kforge::MemberParams m, kf_u64 numel, T* out,       \
                                                 kf_u64 key, kf_u64* fp) {                                          \
    const kf_u64 k = 8 / sizeof(T), words = numel / k;                                                              \
    kf_u64 stride = (kf_u64)gridDim.x * blockDim.x, t = (kf_u64)blockIdx.x * blockDim.x + threadIdx.x, acc = 0;     \
    for (kf_u64 w = t; w < words; w += stride) {                                                                    \
      union { kf_u64 u; T e[8 / sizeof(T)]; } x;                                                                    \
      for (kf_u64 j = 0; j < k; ++j) {                                                                              \
        kf_u64 i = w * k + j;                                                                                       \
        x.e[j] = KF_MEMBER_##DT(kf_elem_##DT(p, i));                                                                \
      }                                                                                                             \
      ((kf_u64*)out)[w] = x.u;                                                                                      \
      acc += kf_fp_term(x.u, w, key);                                                                               \
    }                                                                                                               \
    if (t == 0)                                                                                                     \
      for (kf_u64 i = words * k; i < numel; ++i) {                                                                  \
        T v = KF_MEMBER_##DT(kf_elem_##DT(p, i));                                                                   \
        out[i] = v;                                                                                                 \
        const unsigned char* b = (const unsigned char*)&v;                                                          \
        for (kf_u64 j = 0; j < sizeof(T); ++j) acc += kf_fp_term(b[j], words + (i - words * k) * sizeof(T) + j, key); \
      }                                                                                                             \
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);                                  \
    if ((threadIdx.x & 31) == 0) atomicAdd(fp, acc);                                                                \
  }
KF_DRAW_FP_KERNEL(float32, float)
KF_DRAW_FP_KERNEL(float16, unsigned short)
KF_DRAW_FP_KERNEL(bfloat16, unsigned short)
KF_DRAW_FP_KERNEL(int32, int)
KF_DRAW_FP_KERNEL(int64, kf_i64)
KF_DRAW_FP_KERNEL(boolean, unsigned char)
)";

constexpr DType kDTypes[6] = {DType::float32, DType::float16, DType::bfloat16, DType::int32, DType::int64, DType::boolean};

int dtype_slot(DType dtype) {
  for (int i = 0; i < 6; ++i)
    if (kDTypes[i] == dtype) return i;
  KFORGE_FAIL(internal, "no draw kernel for dtype " << dtype_name(dtype));
}

KfDrawParams make_params(const Draw& d, uint64_t stream_key) {
  KfDrawParams p{};
  p.stream = stream_key;
  p.a = d.a;
  p.ih_mean = 131070.0;
  // The same IEEE operations as draw.cpp's kIrwinHallInvSd ((65536^2 - 1) / 3 = 1431655765 is
  // exact; sqrt and division are correctly rounded), so the value is the same double.
  p.ih_inv_sd = 1.0 / std::sqrt((65536.0 * 65536.0 - 1.0) / 3.0);
  switch (d.dist) {
    case DrawDist::normal:
      p.dist = 0;
      p.b = d.b;
      break;
    case DrawDist::uniform:
      p.dist = 1;
      p.b = d.b - d.a;
      break;
    case DrawDist::randint:
      p.dist = 2;
      p.range = static_cast<uint64_t>(d.b - d.a);
      p.low_int = static_cast<int64_t>(d.a);
      break;
    case DrawDist::constant:
      p.dist = 3;
      // Only integer dtypes read it, and validate() then guarantees an integral value.
      p.low_int = std::isfinite(d.a) && std::fabs(d.a) < 9.2e18 ? static_cast<int64_t>(d.a) : 0;
      break;
  }
  return p;
}

}  // namespace

std::string DeviceDrawer::source() {
  return std::string(kDevicePrelude) + kSharedSource + "\n" + member_element_source() + "\n" + DeviceChecker::fingerprint_term_source() +
         "\n" + kDeviceKernels;
}

const char* DeviceDrawer::kernel_name(DType dtype) {
  static const char* const names[6] = {"kforge_draw_float32", "kforge_draw_float16", "kforge_draw_bfloat16",
                                       "kforge_draw_int32",   "kforge_draw_int64",   "kforge_draw_boolean"};
  return names[dtype_slot(dtype)];
}

std::vector<char> DeviceDrawer::compile(const std::string& arch) {
  // Exact arithmetic: no multiply-add contraction, no flush of subnormals, IEEE division/sqrt.
  return compile_harness_cubin(source(), "kforge_draw.cu", arch,
                               {"--fmad=false", "--ftz=false", "--prec-div=true", "--prec-sqrt=true", "--std=c++17"}, "draw kernel");
}

namespace {

// The draw kernels in dtype_slot order (functions[dtype_slot(t)] writes t), the member kernels of
// the float dtypes (functions[6 + dtype_slot(t)]), then the fingerprinting draws
// (functions[9 + dtype_slot(t)]).
std::vector<std::string> kernel_names() {
  std::vector<std::string> names;
  for (DType t : kDTypes) names.push_back(DeviceDrawer::kernel_name(t));
  for (const char* t : {"float32", "float16", "bfloat16"}) names.push_back(std::string("kforge_member_") + t);
  for (DType t : kDTypes) names.push_back(std::string("kforge_draw_fp_") + (DeviceDrawer::kernel_name(t) + std::strlen("kforge_draw_")));
  return names;
}

// Enough blocks of 256 threads to fill the GPU several times over; the grid-stride loop covers the rest.
unsigned grid_for(const HarnessModule::Loaded& l, unsigned long long n) {
  constexpr unsigned kBlock = 256;
  unsigned long long blocks_needed = (n + kBlock - 1) / kBlock;
  unsigned long long max_blocks = static_cast<unsigned long long>(std::max(1, l.sm_count)) * 16;
  return static_cast<unsigned>(std::min(blocks_needed, max_blocks));
}

}  // namespace

DeviceDrawer::DeviceDrawer(const std::string& arch) : module_(compile(arch), arch, "draw kernel", kernel_names()) {}

void DeviceDrawer::fill(const Draw& draw, DType dtype, uint64_t stream_key, int64_t numel, CUdeviceptr out, CUstream cu_stream,
                        const MemberParams& member, uint64_t fp_key, CUdeviceptr fp_out) {
  draw.validate(dtype);
  check_member(member, dtype);
  KFORGE_CHECK(numel >= 0, internal, "draw kernel: negative element count " << numel);
  if (numel == 0) return;
  KFORGE_CHECK(out != 0 && out % dtype_size(dtype) == 0, runtime,
               "draw kernel: output address 0x" << std::hex << out << " is null or not aligned for " << dtype_name(dtype));
  const HarnessModule::Loaded& l = module_.in_current_context();
  KfDrawParams p = make_params(draw, stream_key);
  MemberParams m = member;
  unsigned long long n = static_cast<unsigned long long>(numel);
  void* ptr = reinterpret_cast<void*>(static_cast<uintptr_t>(out));
  if (fp_out != 0) {
    KFORGE_CHECK(out % 8 == 0 && fp_out % 8 == 0, internal, "draw kernel: a fingerprinting draw needs 8-byte aligned addresses");
    unsigned long long key = fp_key, words = n / (8 / dtype_size(dtype));
    void* fp = reinterpret_cast<void*>(static_cast<uintptr_t>(fp_out));
    void* args[] = {&p, &m, &n, &ptr, &key, &fp};
    cuda_check(cuda_driver().LaunchKernel(l.functions[9 + dtype_slot(dtype)], grid_for(l, std::max(words, 1ULL)), 1, 1, 256, 1, 1, 0,
                                          cu_stream, args, nullptr),
               module_.what() + ": cuLaunchKernel (fingerprinting draw)");
    return;
  }
  void* args[] = {&p, &m, &n, &ptr};
  cuda_check(cuda_driver().LaunchKernel(l.functions[dtype_slot(dtype)], grid_for(l, n), 1, 1, 256, 1, 1, 0, cu_stream, args, nullptr),
             module_.what() + ": cuLaunchKernel");
}

void DeviceDrawer::apply_member(const MemberParams& member, DType dtype, int64_t numel, CUdeviceptr data, CUstream cu_stream) {
  check_member(member, dtype);
  KFORGE_CHECK(numel >= 0, internal, "member kernel: negative element count " << numel);
  if (numel == 0 || member.kind == 0) return;
  KFORGE_CHECK(data != 0 && data % dtype_size(dtype) == 0, runtime,
               "member kernel: address 0x" << std::hex << data << " is null or not aligned for " << dtype_name(dtype));
  const HarnessModule::Loaded& l = module_.in_current_context();
  MemberParams m = member;
  unsigned long long n = static_cast<unsigned long long>(numel);
  void* ptr = reinterpret_cast<void*>(static_cast<uintptr_t>(data));
  void* args[] = {&m, &n, &ptr};
  cuda_check(cuda_driver().LaunchKernel(l.functions[6 + dtype_slot(dtype)], grid_for(l, n), 1, 1, 256, 1, 1, 0, cu_stream, args, nullptr),
             module_.what() + ": cuLaunchKernel (member)");
}

void DeviceDrawer::check_member(const MemberParams& member, DType dtype) {
  if (member.kind == 0) return;
  KFORGE_CHECK(dtype == DType::float32 || dtype == DType::float16 || dtype == DType::bfloat16, internal,
               "draw kernel: a member on a " << dtype_name(dtype) << " argument (members move float arguments only)");
  KFORGE_CHECK(member.last >= 1 && member.inner >= 1 && member.channels >= 1, internal, "draw kernel: a member with a size of 0");
}

void fill_draw_like_device(const Draw& draw, DType dtype, uint64_t stream_key, int64_t numel, void* out, const MemberParams& member) {
  namespace dc = draw_device_code;
  draw.validate(dtype);
  KFORGE_CHECK(numel >= 0, internal, "draw: negative element count " << numel);
  if (member.kind != 0) {  // the member's element code after the draw's: what the fused kernel writes
    fill_draw_like_device(draw, dtype, stream_key, numel, out);
    apply_member_elements(member, dtype, out, 0, numel);
    return;
  }
  KfDrawParams p = make_params(draw, stream_key);
  for (unsigned long long i = 0; i < static_cast<unsigned long long>(numel); ++i) {
    switch (dtype) {
      case DType::float32:
        static_cast<float*>(out)[i] = dc::kf_elem_float32(p, i);
        break;
      case DType::float16:
        static_cast<uint16_t*>(out)[i] = dc::kf_elem_float16(p, i);
        break;
      case DType::bfloat16:
        static_cast<uint16_t*>(out)[i] = dc::kf_elem_bfloat16(p, i);
        break;
      case DType::int32:
        static_cast<int32_t*>(out)[i] = dc::kf_elem_int32(p, i);
        break;
      case DType::int64:
        static_cast<int64_t*>(out)[i] = dc::kf_elem_int64(p, i);
        break;
      case DType::boolean:
        static_cast<uint8_t*>(out)[i] = dc::kf_elem_boolean(p, i);
        break;
    }
  }
}

}  // namespace kforge
