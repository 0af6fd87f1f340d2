#pragma once
// Edge cases of the tolerance rule for float32, float16 and bfloat16, shared by the CPU and GPU
// agreement tests (tolerance_agreement_test.cpp, tolerance_agreement_gpu_test.cpp): element pairs
// (candidate, reference) as bit patterns, and the tolerances to judge them under.
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <ATen/ATen.h>

#include "configs/eval_config.h"
#include "data_synth/task/dtype.h"
#include "env/judge/output_compare.h"

namespace kforge::testing {

// The poison id of the trial the pairs stand for (one edge value is its poison).
inline constexpr uint64_t kPoisonId = 5;

inline at::ScalarType scalar_of(DType t) {
  switch (t) {
    case DType::float32:
      return at::kFloat;
    case DType::float16:
      return at::kHalf;
    default:
      return at::kBFloat16;
  }
}
inline at::ScalarType bits_of(DType t) { return t == DType::float32 ? at::kInt : at::kShort; }

// Values of the dtype, as its bit patterns (a 1-D tensor of bits_of(dtype)).
inline at::Tensor dtype_bits(DType t, const std::vector<double>& values) {
  return at::tensor(values, at::kDouble).to(scalar_of(t)).view(bits_of(t));
}
inline at::Tensor raw_bits(DType t, const std::vector<int64_t>& bits) { return at::tensor(bits, at::kLong).to(bits_of(t)); }

// The edge values of a dtype: zeros of both signs, ones, ordinary and tiny numbers, the smallest
// subnormal and normal, the largest finite value, infinities, NaNs (quiet, with a payload,
// negative) and the trial's poison.
inline at::Tensor edge_values(DType t) {
  const int mant = t == DType::float32 ? 23 : t == DType::float16 ? 10 : 7;
  const int emin = t == DType::float32 ? -126 : t == DType::float16 ? -14 : -126;
  const double max = t == DType::float32 ? std::numeric_limits<float>::max() : t == DType::float16 ? 65504.0 : 0x1.FEp127;
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> v = {0.0,
                           -0.0,
                           1.0,
                           -1.0,
                           0.1,
                           -0.3,
                           3.0,
                           1000.0,
                           1e-3,
                           1e-6,
                           std::ldexp(1.0, emin - mant),
                           -std::ldexp(1.0, emin - mant),
                           std::ldexp(3.0, emin - mant),
                           std::ldexp(1.0, emin),
                           std::ldexp(1.0, emin) * (1 - std::ldexp(1.0, -mant)),
                           max,
                           -max,
                           max / 2,
                           inf,
                           -inf};
  std::vector<int64_t> nans;
  if (t == DType::float32)
    nans = {0x7FC00000, 0x7FC00001, 0x7FFFFFFF, -0x00400000 /* 0xFFC00000 */};
  else if (t == DType::float16)
    nans = {0x7E00, 0x7C01, 0x7FFF, 0xFE00};
  else
    nans = {0x7FC0, 0x7F81, 0x7FFF, 0xFFC0};
  at::Tensor poison = at::tensor({poison_fill_value(t, kPoisonId)}, at::kLong).to(bits_of(t));
  return at::cat({dtype_bits(t, v), raw_bits(t, nans), poison});
}

struct EdgePairs {
  at::Tensor cand, ref;  // bits, 1-D, the same length
};

// Every edge value against every other, then elements at r +- bound(r) for ordinary r and the
// neighbours one ulp either side (bit pattern +- 1).
inline EdgePairs pairs_for(DType t, const Tolerance& tol) {
  at::Tensor e = edge_values(t);
  const int64_t m = e.numel();
  at::Tensor ci = at::arange(m, at::kLong).repeat_interleave(m), ri = at::arange(m, at::kLong).repeat({m});
  std::vector<at::Tensor> cs = {e.index_select(0, ci)}, rs = {e.index_select(0, ri)};
  const std::vector<double> refs = {1.0, -1.0, 0.1, 3.0, 1000.0, 0.0, 1e-3, -2.5e-4};
  at::Tensor r = at::tensor(refs, at::kDouble).to(scalar_of(t));
  at::Tensor bound = tol.atol + tol.rtol * r.to(at::kDouble).abs();
  for (int sign : {1, -1}) {
    at::Tensor at_bound = (r.to(at::kDouble) + sign * bound).to(scalar_of(t)).view(bits_of(t));
    for (int step : {-1, 0, 1}) {
      cs.push_back(at_bound + step);
      rs.push_back(r.view(bits_of(t)));
    }
  }
  return {at::cat(cs).contiguous(), at::cat(rs).contiguous()};
}

inline std::vector<Tolerance> tolerances(DType t) {
  const double tiny = t == DType::float32 ? std::ldexp(1.0, -146) : t == DType::float16 ? std::ldexp(1.0, -22) : std::ldexp(1.0, -130);
  return {PrecisionConfig{}.for_dtype(dtype_name(t)),
          {std::ldexp(1.0, -10), std::ldexp(1.0, -7)},  // powers of two: r + bound is exact for r = 1
          {1e-5, 0.0},
          {0.0, 1e-3},
          {tiny, 0.0}};  // a few subnormals' worth of absolute tolerance
}

inline constexpr DType kFloatTypes[] = {DType::float32, DType::float16, DType::bfloat16};

}  // namespace kforge::testing
