#include "env/judge/output_compare.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "data_synth/reference/reference.h"
#include "data_synth/reference/tolerance.h"
#include "env/judge/check_kernel.h"

namespace kforge {

namespace {

at::ScalarType bits_type(DType t) {
  switch (dtype_size(t)) {
    case 1:
      return at::kByte;
    case 2:
      return at::kShort;
    case 4:
      return at::kInt;
    default:
      return at::kLong;
  }
}

std::vector<int64_t> unravel(int64_t flat, const Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    idx[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
  return idx;
}

}  // namespace

at::Tensor as_bits(const at::Tensor& t, DType dtype) { return t.reshape({-1}).view(bits_type(dtype)); }

int64_t poison_fill_value(DType dtype, uint64_t poison_id) {
  uint64_t bits = poison_bits_for_trial(dtype, poison_id);
  switch (dtype_size(dtype)) {
    case 1:
      return static_cast<int64_t>(static_cast<uint8_t>(bits));
    case 2:
      return static_cast<int64_t>(static_cast<int16_t>(bits));
    case 4:
      return static_cast<int64_t>(static_cast<int32_t>(bits));
    default:
      return static_cast<int64_t>(bits);
  }
}

void poison_output(at::Tensor& t, DType dtype, uint64_t poison_id) { as_bits(t, dtype).fill_(poison_fill_value(dtype, poison_id)); }

// Compares one candidate output with the reference's, in chunks so temporaries stay small.
// The slow path (libtorch, double precision, in chunks): the tolerance rule of data_synth/reference/tolerance.h
// and the poison and error statistics of the fused kernel (check_kernel.h), plus a few mismatching
// elements with both values. Used when the fused compare found mismatches, or when the reference's
// output is not of the declared dtype.
Json compare_output(const std::string& name, const at::Tensor& cand, const at::Tensor& ref_in, DType dtype, const Tolerance& tol,
                    int max_examples, uint64_t trial) {
  const int64_t poison = poison_fill_value(dtype, trial);
  at::Tensor ref = ref_in.contiguous();
  const Shape shape(ref.sizes().begin(), ref.sizes().end());
  at::Tensor c_flat = cand.reshape({-1}), r_flat = ref.reshape({-1});
  at::Tensor c_bits = as_bits(cand, dtype);
  const int64_t n = c_flat.numel();
  constexpr int64_t kChunk = int64_t{1} << 25;
  int64_t mismatches = 0, unwritten = 0;
  double max_abs = 0, max_rel = 0;
  Json examples = Json::array();
  for (int64_t start = 0; start < n; start += kChunk) {
    int64_t len = std::min(kChunk, n - start);
    at::Tensor c = c_flat.narrow(0, start, len).to(at::kDouble);
    at::Tensor r = r_flat.narrow(0, start, len).to(at::kDouble);
    at::Tensor poisoned = c_bits.narrow(0, start, len).eq(poison);
    unwritten += poisoned.sum().item<int64_t>();
    at::Tensor bad = outside_tolerance(c, r, tol);
    if (dtype_is_float(dtype)) bad = bad.logical_or(poisoned);  // unwritten, even where the reference is NaN
    // The reported errors are over elements finite in both.
    at::Tensor both_finite = at::isfinite(c).logical_and(at::isfinite(r));
    at::Tensor err = (c - r).abs();
    int64_t nbad = bad.sum().item<int64_t>();
    mismatches += nbad;
    at::Tensor fin_err = at::where(both_finite, err, at::zeros_like(err));
    max_abs = std::max(max_abs, fin_err.max().item<double>());
    at::Tensor rel = at::where(both_finite.logical_and(r.ne(0)), err / r.abs(), at::zeros_like(err));
    max_rel = std::max(max_rel, rel.max().item<double>());
    for (int64_t s = 0; nbad > 0 && s < len && static_cast<int>(examples.size()) < max_examples; s += 1 << 20) {
      int64_t sl = std::min<int64_t>(1 << 20, len - s);
      at::Tensor idx = bad.narrow(0, s, sl).nonzero().reshape({-1});
      for (int64_t k = 0; k < idx.numel() && static_cast<int>(examples.size()) < max_examples; ++k) {
        int64_t local = s + idx[k].item<int64_t>();
        int64_t flat = start + local;
        examples.push_back(
            {{"index", unravel(flat, shape)}, {"candidate", c[local].item<double>()}, {"reference", r[local].item<double>()}});
      }
    }
  }
  // JSON cannot hold NaN: a report of a NaN value says "nan".
  for (auto& e : examples)
    for (const char* k : {"candidate", "reference"})
      if (std::isnan(e[k].get<double>())) e[k] = "nan";
  return {{"name", name},
          {"numel", n},
          {"mismatches", mismatches},
          {"unwritten", unwritten},
          {"max_abs_error", max_abs},
          {"max_rel_error", max_rel},
          {"examples", examples}};
}

}  // namespace kforge
