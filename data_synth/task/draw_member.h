#pragma once
// The draw family's members (data_synth/reference/draw_family.h) as element code: what a member
// does to element i of one argument is a pure function of the element's value, its index and the
// member's parameters (seeds hashed, no generator state). Written once and compiled twice: by the
// host compiler here (apply_member_elements, for CPU tensors and the tests) and by NVRTC inside
// the GPU worker's draw kernel (env/judge/draw_kernel.h), which applies a member in the same pass
// that draws the values, or in place on values already drawn. The bytes are the same either way
// and on either side, so the conditioning that approves a member's seeds (condition_variants)
// and the calls that use them see the same values.
//
// Per element, on the value v read as float (float16 and bfloat16 widened exactly), each step one
// IEEE round-to-nearest float operation, then rounded back to the argument's dtype:
//   scaled          v * 2^exponent (one argument; the others none)
//   shifted         v + add
//   row_scaled      v * 2^k, k = hash(row) mod 17 - 8, row = i / last
//   channel_scaled  v * 2^k, k = hash(channel) mod 17 - 8, channel = (i / inner) mod channels
//   element_scaled  v * 2^k, k = hash(i) mod 13 - 6
//   outliers        where hash(i) < threshold (m of numel elements expected): v + s * add * 2^u,
//                   u = hash'(i) mod 5, s = -1 or 1 (1 unless the domain is signed)
//   sign_flip       -v where hash(row) is odd
// where hash(j) is 32 bits: murmur3's finaliser of j * golden32 plus the seed's low word (mixed with
// j's high word where it has one). Quotients by the sizes are exact: by magic numbers where the
// index is under 2^32, else by a product with the size's inverse, corrected.
#include <cstdint>

#include "data_synth/task/dtype.h"

// The parameters of one argument's member, laid out alike by the host compiler and NVRTC (the
// struct's text is also the NVRTC source's: kMemberParamsSource).
#define KFORGE_MEMBER_PARAMS_CODE(...)                        \
  namespace kforge {                                          \
  __VA_ARGS__                                                 \
  inline constexpr char kMemberParamsSource[] = #__VA_ARGS__; \
  }

KFORGE_MEMBER_PARAMS_CODE(struct MemberParams {
  unsigned long long seed;      /* the argument's member seed: the stream of its hashes */
  unsigned long long last;      /* row_scaled, sign_flip: the row length (the last dimension), at least 1 */
  unsigned long long inner;     /* channel_scaled: elements per slice of dimension 1, at least 1 */
  unsigned long long channels;  /* channel_scaled: the size of dimension 1, at least 1 */
  unsigned long long threshold; /* outliers: an element moves where its 32-bit hash is below it (2^32: all) */
  double inv_last;              /* 1 / last, 1 / inner, 1 / channels: the device divides by */
  double inv_inner;             /* multiplying, then corrects the quotient to the exact one */
  double inv_channels;
  unsigned int magic_last;     /* the three sizes' magic numbers for 32-bit quotients (0: a size of */
  unsigned int magic_inner;    /* 2^32 or more, divided in 64 bits), and their two shifts (first | */
  unsigned int magic_channels; /* second << 8) */
  unsigned int shift_last;
  unsigned int shift_inner;
  unsigned int shift_channels;
  float add;         /* shifted: the value added; outliers: 8 spreads */
  int kind;          /* the DrawVariant (0: leaves the argument as drawn) */
  int exponent;      /* scaled: the power of two */
  int signed_domain; /* outliers: whether a move may be negative */
};)

namespace kforge {

static_assert(sizeof(MemberParams) == 104, "MemberParams must have the layout NVRTC gives it");

// The element code's text for NVRTC: the parameters' struct, then kf_member_float32,
// kf_member_float16 and kf_member_bfloat16 (value, index -> value). It uses primitives the draw
// kernel's source defines before it (kf_f2u, kf_u2f, kf_fmul, kf_fadd, kf_u2d, kf_dmul, kf_d2u_rz,
// kf_umulhi, kf_float_to_half, kf_float_to_bf16; env/judge/draw_kernel.cpp).
const char* member_element_source();

// Applies `m` in place to elements [begin, end) of `data` (dtype float32, float16 or bfloat16),
// on the host: the bytes the device writes. kind 0 changes nothing; a member on another dtype is
// an internal error.
void apply_member_elements(const MemberParams& m, DType dtype, void* data, int64_t begin, int64_t end);

// Parameters of member `kind` under `seed` for an argument whose rows are `last` long and whose
// dimension 1 has `channels` slices of `inner` elements (each at least 1; the inverses set from them).
MemberParams member_layout(int kind, unsigned long long seed, unsigned long long last, unsigned long long channels,
                           unsigned long long inner);

// The element code's quotient n / d (by d's magic number under 2^32, else a product with 1 / d,
// then corrected), for tests: it must be the exact one.
unsigned long long exact_quotient(unsigned long long n, unsigned long long d);

// The threshold under which `m` of `numel` elements move (outliers), in the hash's 32-bit space.
unsigned long long outlier_threshold(int64_t m, int64_t numel);

}  // namespace kforge
