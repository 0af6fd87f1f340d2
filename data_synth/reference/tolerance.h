#pragma once
// The tolerance rule for float outputs, the task's contract, as libtorch computes it (CPU or CUDA
// tensors). Every host-side judgement of an output against its reference uses these: the slow
// compare of the GPU worker (env/judge/output_compare.h), the synthesis CPU checks
// (data_synth/synth/cpu_checks.h) and the conditioning of robustness draws (data_synth/reference/draw_family.h).
// The fused device compare (env/judge/check_kernel.cpp, kf_outside_tolerance) writes the same rule
// for NVRTC; tests/env/judge/tolerance_agreement_test.cpp holds the two equal on edge cases.
//
// Per element, both values converted to float64 first (exact for every dtype a task has):
//   both finite:  outside when |out - ref| > atol + rtol * |ref|
//   otherwise:    outside unless out == ref (the same infinity) or both are NaN
// Each step is one IEEE round-to-nearest double operation (a subtraction, an absolute value, a
// multiply, an add, a compare), as on the device. Unwritten (poisoned) elements are the compare's
// business, not the rule's: see output_compare.h.
#include <string>

#include <ATen/ATen.h>

#include "configs/eval_config.h"

namespace kforge {

// atol + rtol * |ref|, in float64: how far an output element may be from `ref`.
at::Tensor tolerance_bound(const at::Tensor& ref, const Tolerance& tol);

// True (a bool tensor of ref's shape) where `out` fails the rule against `ref`.
at::Tensor outside_tolerance(const at::Tensor& out, const at::Tensor& ref, const Tolerance& tol);

// |out - ref| / (atol + rtol * |ref|), in float64: the share of the tolerance an element uses (above
// 1 it is outside, below 1 within; exactly 1 may be either, by the division's rounding). Meant for
// finite values: callers check finiteness first.
at::Tensor tolerance_ratio(const at::Tensor& out, const at::Tensor& ref, const Tolerance& tol);

// The largest tolerance_ratio of a float output `out` (any float dtype) against its float64 twin
// `ref64` (the same computation in float64), over every element: the conditioning's measure of how
// much of the tolerance the reference itself uses (draw_family.h). Computed in float64 chunk by
// chunk, in place, with one wait for the device per chunk: a non-finite value on either side makes
// the chunk's maximum non-finite, and only then are the sides looked at, to say in `reason` which:
// "the float64 reference has non-finite values" or "the reference overflows in its dtype" (the
// largest ratio before that chunk is returned). `sumsq`, when given, receives ref64's sum of squares.
// With atol 0, an element where both are 0 uses none of the tolerance (0/0 counts as 0), and one
// where ref is 0 and out is not uses an infinite share.
double max_tolerance_ratio(const at::Tensor& out, const at::Tensor& ref64, const Tolerance& tol, std::string& reason,
                           double* sumsq = nullptr);

}  // namespace kforge
