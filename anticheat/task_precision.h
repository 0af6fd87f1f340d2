#pragma once
// The precision contract of a task's function (MathPrecision, dynamic_checks.h): the floating dtypes
// it reads (used arguments) and writes, and its tolerance. Header-only: its users (the GPU worker's
// speed-of-light check, `kforge tasks headroom`) link both the task model and the anti-cheat rules,
// which do not depend on each other.
#include "anticheat/dynamic_checks.h"
#include "data_synth/task/task_spec.h"

namespace kforge {

inline MathPrecision task_math_precision(const TaskSpec& t) {
  bool any_f32 = false, any_f16 = false;
  for (const TaskArgument& a : t.arguments)
    if (a.decl.used && dtype_is_float(a.decl.meta.dtype)) (a.decl.meta.dtype == DType::float32 ? any_f32 : any_f16) = true;
  for (const TaskOutput& o : t.outputs)
    if (dtype_is_float(o.meta.dtype)) (o.meta.dtype == DType::float32 ? any_f32 : any_f16) = true;
  return math_precision(any_f32, any_f16, t.tolerance);
}

}  // namespace kforge
