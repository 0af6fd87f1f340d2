#pragma once
// Element types a task's tensors may have, with their names in specs, PyTorch and sizes.
#include <cstddef>
#include <string>

namespace kforge {

enum class DType { float32, float16, bfloat16, int32, int64, boolean };

const char* dtype_name(DType t);        // "float32", as written in specs
const char* dtype_torch_name(DType t);  // "torch.float32"
size_t dtype_size(DType t);             // bytes per element
bool dtype_is_float(DType t);
DType dtype_from_name(const std::string& name);  // throws a spec error naming the choices

}  // namespace kforge
