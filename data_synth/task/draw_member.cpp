#include "data_synth/task/draw_member.h"

#include <string>

#include "configs/error.h"
#include "data_synth/task/draw.h"

// Host versions of the primitives the element code uses, each the device's operation: one IEEE
// round-to-nearest float operation (this file is compiled with -ffp-contract=off), the high word
// of a 32-bit product, and the draw's own conversions to float16 and bfloat16.
namespace kforge {
namespace member_device_code {
typedef unsigned long long kf_u64;
typedef unsigned int kf_u32;
inline kf_u32 kf_umulhi(kf_u32 a, kf_u32 b) { return static_cast<kf_u32>((static_cast<kf_u64>(a) * b) >> 32); }
inline float kf_fmul(float x, float y) { return x * y; }
inline float kf_fadd(float x, float y) { return x + y; }
inline double kf_u2d(kf_u64 x) { return static_cast<double>(x); }
inline double kf_dmul(double x, double y) { return x * y; }
inline kf_u64 kf_d2u_rz(double x) { return static_cast<kf_u64>(x); }
inline kf_u32 kf_f2u(float f) { return bit_cast<uint32_t>(f); }
inline float kf_u2f(kf_u32 u) { return bit_cast<float>(u); }
inline unsigned short kf_float_to_half(float f) { return float_to_half_bits(f); }
inline unsigned short kf_float_to_bf16(float f) { return float_to_bfloat16_bits(f); }
}  // namespace member_device_code
}  // namespace kforge

// The element code, written once: expanded here as host C++ and kept as text for NVRTC (one line,
// comments stripped by the preprocessor; no # directive).
#define KF_FN inline
#define KFORGE_MEMBER_SHARED_CODE(...)       \
  namespace kforge {                         \
  namespace member_device_code {             \
  __VA_ARGS__                                \
  }                                          \
  }                                          \
  namespace {                                \
  const char kSharedSource[] = #__VA_ARGS__; \
  }

KFORGE_MEMBER_SHARED_CODE(
    /* 2^k as a float, k in [-126, 127]. */
    KF_FN float kf_pow2(int k) { return kf_u2f((kf_u32)(127 + k) << 23); }

    /* murmur3's 32-bit finaliser. */
    KF_FN kf_u32 kf_fmix32(kf_u32 h) {
      h ^= h >> 16;
      h *= 0x85ebca6bu;
      h ^= h >> 13;
      h *= 0xc2b2ae35u;
      return h ^ (h >> 16);
    }

    /* The member's hash of index j under its seed: 32 bits (a member draws no more), j's high word
       mixed in only where it has one. */
    KF_FN kf_u32 kf_member_hash(kf_u64 seed, kf_u64 j) {
      kf_u32 hi = (kf_u32)(j >> 32), s = (kf_u32)(seed >> 32);
      kf_u32 k = (kf_u32)seed ^ (hi ? kf_fmix32(hi ^ s) : s);
      return kf_fmix32((kf_u32)j * 0x9e3779b1u + k);
    }

    /* n / d exactly (d >= 1, n < 2^62): under 2^32 by d's magic number (Granlund and Montgomery,
       rounded up: shifts = first | second << 8), else the product with inv = 1 / d, corrected to the
       exact quotient (a device division of 64-bit integers costs more than the draw it serves). */
    KF_FN kf_u64 kf_quot(kf_u64 n, kf_u64 d, double inv, kf_u32 magic, kf_u32 shifts) {
      if ((n >> 32) == 0 && magic != 0) {
        kf_u32 t = kf_umulhi((kf_u32)n, magic);
        return (t + (((kf_u32)n - t) >> (shifts & 0xffu))) >> (shifts >> 8);
      }
      kf_u64 q = kf_d2u_rz(kf_dmul(kf_u2d(n), inv));
      while (q * d > n) --q;
      while ((q + 1) * d <= n) ++q;
      return q;
    }

    /* A float16's value as a float (exact). */
    KF_FN float kf_half_to_float(unsigned short h) {
      kf_u32 sign = ((kf_u32)h & 0x8000u) << 16, e = ((kf_u32)h >> 10) & 0x1fu, m = (kf_u32)h & 0x3ffu;
      if (e == 0x1fu) return kf_u2f(sign | 0x7f800000u | (m << 13));
      if (e != 0) return kf_u2f(sign | ((e + 112u) << 23) | (m << 13));
      float f = kf_fmul((float)m, 5.9604644775390625e-08f);
      return sign ? -f : f;
    }

    /* The member's value of element i, whose value is v. */
    KF_FN float kf_member(const kforge::MemberParams& p, kf_u64 i, float v) {
      if (p.kind == 1) return kf_fmul(v, kf_pow2(p.exponent));
      if (p.kind == 2) return kf_fadd(v, p.add);
      if (p.kind == 3 || p.kind == 7) {
        kf_u32 h = kf_member_hash(p.seed, kf_quot(i, p.last, p.inv_last, p.magic_last, p.shift_last));
        if (p.kind == 7) return (h & 1u) ? -v : v;
        return kf_fmul(v, kf_pow2((int)(h % 17u) - 8));
      }
      if (p.kind == 4) {
        kf_u64 slice = kf_quot(i, p.inner, p.inv_inner, p.magic_inner, p.shift_inner);
        kf_u64 channel = slice - kf_quot(slice, p.channels, p.inv_channels, p.magic_channels, p.shift_channels) * p.channels;
        return kf_fmul(v, kf_pow2((int)(kf_member_hash(p.seed, channel) % 17u) - 8));
      }
      if (p.kind == 5) return kf_fmul(v, kf_pow2((int)(kf_member_hash(p.seed, i) % 13u) - 6));
      if (p.kind == 6) {
        kf_u32 h = kf_member_hash(p.seed, i);
        if ((kf_u64)h >= p.threshold) return v;
        kf_u32 g = kf_fmix32(h ^ 0x6f75746cu);
        float d = kf_fmul(p.add, kf_pow2((int)(g % 5u)));
        return kf_fadd(v, p.signed_domain && ((g >> 16) & 1u) ? -d : d);
      }
      return v;
    }

    KF_FN float kf_member_float32(const kforge::MemberParams& p, kf_u64 i, float v) {
      return kf_member(p, i, v);
    } KF_FN unsigned short kf_member_float16(const kforge::MemberParams& p, kf_u64 i, unsigned short b) {
      return kf_float_to_half(kf_member(p, i, kf_half_to_float(b)));
    } KF_FN unsigned short kf_member_bfloat16(const kforge::MemberParams& p, kf_u64 i, unsigned short b) {
      return kf_float_to_bf16(kf_member(p, i, kf_u2f((kf_u32)b << 16)));
    })

namespace kforge {

const char* member_element_source() {
  static const std::string source = std::string("namespace kforge {\n") + kMemberParamsSource + "\n}\n" + kSharedSource + "\n";
  return source.c_str();
}

void apply_member_elements(const MemberParams& m, DType dtype, void* data, int64_t begin, int64_t end) {
  namespace dc = member_device_code;
  if (m.kind == 0 || begin >= end) return;
  KFORGE_CHECK(m.last >= 1 && m.inner >= 1 && m.channels >= 1, internal, "draw member: a size of 0 in its parameters");
  switch (dtype) {
    case DType::float32: {
      float* p = static_cast<float*>(data);
      for (int64_t i = begin; i < end; ++i) p[i] = dc::kf_member_float32(m, static_cast<dc::kf_u64>(i), p[i]);
      return;
    }
    case DType::float16: {
      uint16_t* p = static_cast<uint16_t*>(data);
      for (int64_t i = begin; i < end; ++i) p[i] = dc::kf_member_float16(m, static_cast<dc::kf_u64>(i), p[i]);
      return;
    }
    case DType::bfloat16: {
      uint16_t* p = static_cast<uint16_t*>(data);
      for (int64_t i = begin; i < end; ++i) p[i] = dc::kf_member_bfloat16(m, static_cast<dc::kf_u64>(i), p[i]);
      return;
    }
    default:
      KFORGE_FAIL(internal, "draw member " << m.kind << " on a " << dtype_name(dtype) << " argument: members move float arguments only");
  }
}

namespace {

// d's magic number and shifts for 32-bit quotients (Hacker's Delight 10-8, rounded up); magic 0
// where d needs 64 bits.
void magic_for(unsigned long long d, unsigned int& magic, unsigned int& shifts) {
  magic = shifts = 0;
  if (d >= (1ULL << 32)) return;
  unsigned l = 0;
  while ((1ULL << l) < d) ++l;  // ceil(log2 d)
  magic = static_cast<unsigned int>((((1ULL << l) - d) << 32) / d + 1);
  shifts = (l < 1 ? l : 1u) | ((l > 0 ? l - 1 : 0u) << 8);
}

}  // namespace

MemberParams member_layout(int kind, unsigned long long seed, unsigned long long last, unsigned long long channels,
                           unsigned long long inner) {
  KFORGE_CHECK(last >= 1 && channels >= 1 && inner >= 1, internal, "draw member: a size of 0 in its layout");
  MemberParams m{};
  m.kind = kind;
  m.seed = seed;
  m.last = last;
  m.channels = channels;
  m.inner = inner;
  m.inv_last = 1.0 / static_cast<double>(last);
  m.inv_channels = 1.0 / static_cast<double>(channels);
  m.inv_inner = 1.0 / static_cast<double>(inner);
  magic_for(last, m.magic_last, m.shift_last);
  magic_for(channels, m.magic_channels, m.shift_channels);
  magic_for(inner, m.magic_inner, m.shift_inner);
  return m;
}

unsigned long long exact_quotient(unsigned long long n, unsigned long long d) {
  const MemberParams m = member_layout(1, 0, d, 1, 1);
  return member_device_code::kf_quot(n, m.last, m.inv_last, m.magic_last, m.shift_last);
}

unsigned long long outlier_threshold(int64_t m, int64_t numel) {
  if (numel <= 0 || m <= 0) return 0;
  if (m >= numel) return 1ULL << 32;
  return static_cast<unsigned long long>((static_cast<unsigned __int128>(m) << 32) / static_cast<unsigned __int128>(numel));
}

}  // namespace kforge
