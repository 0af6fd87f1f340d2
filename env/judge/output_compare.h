#pragma once
// A candidate output against the reference's on the slow path, and the poison an output holds
// before the candidate writes it. The fused device comparison (check_kernel.h) decides clean
// outputs; this path (libtorch, double precision, in chunks) applies the same rule and reports a
// few mismatching elements with both values, where the fused one found mismatches or could not run.
#include <cstdint>
#include <string>

#include <ATen/ATen.h>

#include "data_synth/task/task_spec.h"
#include "env/process/worker_protocol.h"

namespace kforge {

// The tensor's elements as same-sized integers (for poison fills and bit compares).
at::Tensor as_bits(const at::Tensor& t, DType dtype);
// The poison of `poison_id` (check_kernel.h's poison_bits_for_trial) as a fill value of as_bits().
int64_t poison_fill_value(DType dtype, uint64_t poison_id);
void poison_output(at::Tensor& t, DType dtype, uint64_t poison_id);

// {"name", "numel", "mismatches", "unwritten", "max_abs_error", "max_rel_error", "examples"}.
Json compare_output(const std::string& name, const at::Tensor& cand, const at::Tensor& ref, DType dtype, const Tolerance& tol,
                    int max_examples, uint64_t poison_id);

}  // namespace kforge
