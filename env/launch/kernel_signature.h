#pragma once
// The extern "C" __global__ functions of a kernel candidate's source, read without a compiler:
// their names and parameter types are what a launch plan is checked against before anything is
// compiled or launched. A kernel the reader cannot find (hidden behind a macro, say) counts as
// unknown to the plan.
#include <optional>
#include <string>
#include <vector>

#include "data_synth/task/dtype.h"

namespace kforge {

enum class ParamKind { pointer, i32, u32, i64, u64, f32, f64, other };

struct KernelParam {
  std::string type_text;  // as written, normalised spacing: "const float* __restrict__"
  std::string name;       // "" when unnamed
  ParamKind kind = ParamKind::other;
  bool is_const = false;  // pointers: the pointee is const; values: the value is
  // Pointers to one level: the element type the tensor must have (float -> float32, __half and
  // half -> float16, __nv_bfloat16 -> bfloat16, int and int32_t -> int32, long long, long and
  // int64_t -> int64, bool -> bool); nullopt for void* and for element types no dtype matches.
  std::optional<DType> pointee;
  std::string pointee_text;  // the element type without qualifiers: "float", "void", "float4"
};

struct KernelSignature {
  std::string name;
  std::vector<KernelParam> params;
  int line = 0;  // 1-based line of the name in the source
};

// Every extern "C" __global__ function defined or declared in `source`, in source order, once per
// name (a definition is preferred to an earlier declaration). Understands `extern "C" { ... }`
// blocks, namespaces, __launch_bounds__(...) and other attributes, __restrict__, comments,
// preprocessor lines and multi-line parameter lists; templates are never extern "C" and are
// skipped. The source is read as every scan reads it (env/cuda_source/cuda_lexer.h). Never throws on
// odd input: what it cannot read is left out.
std::vector<KernelSignature> parse_kernel_signatures(const std::string& source);

}  // namespace kforge
