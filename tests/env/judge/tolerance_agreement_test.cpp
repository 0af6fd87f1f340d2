// The tolerance rule is written twice: for tensors (data_synth/reference/tolerance.h, used by the slow
// compare, the synthesis CPU checks and robustness conditioning) and for the device
// (kf_outside_tolerance in env/judge/check_kernel.cpp, whose host copy compare_like_device() runs).
// Here both judge the same elements, without a GPU: NaN (several payloads, either sign), ±Inf,
// -0.0, subnormals, the largest values, values exactly at the tolerance and one ulp either side,
// for float32, float16 and bfloat16 under several tolerances. The slow compare (output_compare.h)
// and the fused compare's host copy must then give the same counts and maxima.
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <vector>

#include <gtest/gtest.h>

#include "data_synth/reference/tolerance.h"
#include "env/judge/check_kernel.h"
#include "env/judge/output_compare.h"
#include "tests/env/judge/tolerance_edge_cases.h"

using namespace kforge;
using namespace kforge::testing;

namespace {

std::string describe(DType t, const EdgePairs& p, int64_t i, const Tolerance& tol) {
  std::ostringstream os;
  os.precision(17);
  os << dtype_name(t) << " cand " << p.cand.view(scalar_of(t))[i].item<double>() << " (bits " << p.cand[i].item<int64_t>() << ") ref "
     << p.ref.view(scalar_of(t))[i].item<double>() << " (bits " << p.ref[i].item<int64_t>() << ") atol " << tol.atol << " rtol "
     << tol.rtol;
  return os.str();
}

}  // namespace

TEST(ToleranceAgreement, TheTensorRuleAndTheDeviceRuleJudgeEveryEdgeElementAlike) {
  for (DType t : kFloatTypes) {
    const uint64_t poison = poison_bits_for_trial(t, kPoisonId);
    const int64_t poison_fill = poison_fill_value(t, kPoisonId);
    for (const Tolerance& tol : tolerances(t)) {
      EdgePairs p = pairs_for(t, tol);
      at::Tensor outside = outside_tolerance(p.cand.view(scalar_of(t)), p.ref.view(scalar_of(t)), tol);
      const int64_t n = p.cand.numel(), w = p.cand.element_size();
      const char* cb = static_cast<const char*>(p.cand.data_ptr());
      const char* rb = static_cast<const char*>(p.ref.data_ptr());
      int64_t n_outside = 0, n_within = 0;
      for (int64_t i = 0; i < n; ++i) {
        const bool host = outside[i].item<bool>() || p.cand[i].item<int64_t>() == poison_fill;
        const bool device = compare_like_device(t, cb + i * w, rb + i * w, 1, tol.atol, tol.rtol, poison).mismatches == 1;
        EXPECT_EQ(host, device) << describe(t, p, i, tol);
        (host ? n_outside : n_within) += 1;
      }
      EXPECT_GT(n_outside, 100) << dtype_name(t);
      EXPECT_GT(n_within, 20) << dtype_name(t);
    }
  }
}

TEST(ToleranceAgreement, TheSlowCompareAndTheFusedCompareCountAlike) {
  for (DType t : kFloatTypes) {
    for (const Tolerance& tol : tolerances(t)) {
      EdgePairs p = pairs_for(t, tol);
      at::Tensor cand = p.cand.view(scalar_of(t)), ref = p.ref.view(scalar_of(t));
      Json slow = compare_output("y", cand, ref, t, tol, 0, kPoisonId);
      CompareStats fused = compare_like_device(t, p.cand.data_ptr(), p.ref.data_ptr(), p.cand.numel(), tol.atol, tol.rtol,
                                               poison_bits_for_trial(t, kPoisonId));
      EXPECT_EQ(slow["mismatches"].get<uint64_t>(), fused.mismatches) << dtype_name(t);
      EXPECT_EQ(slow["unwritten"].get<uint64_t>(), fused.unwritten) << dtype_name(t);
      EXPECT_GT(fused.unwritten, 0u);
      EXPECT_EQ(slow["max_abs_error"].get<double>(), fused.max_abs) << dtype_name(t);
      EXPECT_EQ(slow["max_rel_error"].get<double>(), fused.max_rel) << dtype_name(t);
    }
  }
}

TEST(ToleranceAgreement, TheRuleAtItsEdges) {
  const Tolerance tol{std::ldexp(1.0, -10), std::ldexp(1.0, -7)};  // bound at 1 is 9/1024, exactly
  auto out = [&](double c, double r) {
    return outside_tolerance(at::tensor({c}, at::kDouble), at::tensor({r}, at::kDouble), tol)[0].item<bool>();
  };
  const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
  EXPECT_FALSE(out(1 + 9.0 / 1024, 1.0));                      // exactly at the tolerance: within
  EXPECT_TRUE(out(std::nextafter(1 + 9.0 / 1024, 2.0), 1.0));  // one ulp beyond: outside
  EXPECT_FALSE(out(1 - 9.0 / 1024, 1.0));
  EXPECT_FALSE(out(-0.0, 0.0));
  EXPECT_FALSE(out(nan, -nan));  // NaN where the reference has NaN
  EXPECT_TRUE(out(nan, 1.0));
  EXPECT_TRUE(out(1.0, nan));
  EXPECT_FALSE(out(inf, inf));
  EXPECT_TRUE(out(-inf, inf));
  EXPECT_TRUE(out(1e300, inf));
  EXPECT_TRUE(out(inf, 1e300));
  // The ratio: the share of the tolerance used, 1 at the edge.
  at::Tensor ratio =
      tolerance_ratio(at::tensor({1 + 9.0 / 1024, 1.0, 1 + 18.0 / 1024}, at::kDouble), at::tensor({1.0, 1.0, 1.0}, at::kDouble), tol);
  EXPECT_EQ(ratio[0].item<double>(), 1.0);
  EXPECT_EQ(ratio[1].item<double>(), 0.0);
  EXPECT_EQ(ratio[2].item<double>(), 2.0);
}

TEST(ToleranceAgreement, TheRatioAgreesWithTheRuleOnFiniteValues) {
  for (DType t : kFloatTypes) {
    for (const Tolerance& tol : tolerances(t)) {
      EdgePairs p = pairs_for(t, tol);
      at::Tensor c = p.cand.view(scalar_of(t)).to(at::kDouble), r = p.ref.view(scalar_of(t)).to(at::kDouble);
      at::Tensor finite = at::isfinite(c).logical_and(at::isfinite(r));
      at::Tensor ratio = tolerance_ratio(c, r, tol), outside = outside_tolerance(c, r, tol);
      EXPECT_TRUE(outside.logical_and(finite).logical_and(ratio.lt(1)).any().item<bool>() == false) << dtype_name(t);
      EXPECT_TRUE(outside.logical_not().logical_and(finite).logical_and(ratio.gt(1)).any().item<bool>() == false) << dtype_name(t);
    }
  }
}
