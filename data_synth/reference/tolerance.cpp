#include "data_synth/reference/tolerance.h"

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

}  // namespace kforge
