#include "data_synth/reference/tolerance.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kforge {

at::Tensor tolerance_bound(const at::Tensor& ref, const Tolerance& tol) { return tol.atol + tol.rtol * ref.to(at::kDouble).abs(); }

at::Tensor outside_tolerance(const at::Tensor& out, const at::Tensor& ref, const Tolerance& tol) {
  at::Tensor c = out.to(at::kDouble), r = ref.to(at::kDouble);
  at::Tensor both_finite = at::isfinite(c).logical_and(at::isfinite(r));
  at::Tensor over = (c - r).abs().gt(tolerance_bound(r, tol));
  // Non-finite values must match exactly: the same infinity, or NaN where the reference has NaN.
  at::Tensor same_special = c.eq(r).logical_or(at::isnan(c).logical_and(at::isnan(r)));
  return at::where(both_finite, over, same_special.logical_not());
}

at::Tensor tolerance_ratio(const at::Tensor& out, const at::Tensor& ref, const Tolerance& tol) {
  at::Tensor c = out.to(at::kDouble), r = ref.to(at::kDouble);
  return (c - r).abs() / tolerance_bound(r, tol);
}

double max_tolerance_ratio(const at::Tensor& out, const at::Tensor& ref64, const Tolerance& tol, std::string& reason, double* sumsq) {
  // Chunk by chunk: KernelBench's level 1 outputs hold 1.6 G elements, whose float64 temporaries
  // at once ran an 80 GB H100 out of memory (issue 29, 2026-12-07).
  constexpr int64_t kChunk = int64_t(1) << 26;
  const at::Tensor o = out.reshape(-1), r = ref64.reshape(-1).to(at::kDouble);
  const int64_t n = o.numel();
  double worst = 0;
  for (int64_t i = 0; i < n; i += kChunk) {
    const int64_t len = std::min(kChunk, n - i);
    const at::Tensor a = o.narrow(0, i, len), b = r.narrow(0, i, len);
    at::Tensor ratio = at::sub(b, a).abs_();  // float64 by promotion
    ratio.div_(b.abs().mul_(tol.rtol).add_(tol.atol));
    double m = ratio.max().item<double>();
    if (!std::isfinite(m)) {
      if (!at::isfinite(b).all().item<bool>()) {
        reason = "the float64 reference has non-finite values";
        return worst;
      }
      if (!at::isfinite(a).all().item<bool>()) {
        reason = "the reference overflows in its dtype";
        return worst;
      }
      // 0/0 where atol is 0: none of the tolerance (an infinite share stays infinite)
      m = at::nan_to_num(ratio, 0.0, std::numeric_limits<double>::infinity()).max().item<double>();
    }
    worst = std::max(worst, m);
    if (sumsq) {
      const double norm = at::linalg_vector_norm(b).item<double>();
      *sumsq += norm * norm;
    }
  }
  return worst;
}

}  // namespace kforge
