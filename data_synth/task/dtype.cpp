#include "data_synth/task/dtype.h"

#include "configs/error.h"

namespace kforge {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::float32:
      return "float32";
    case DType::float16:
      return "float16";
    case DType::bfloat16:
      return "bfloat16";
    case DType::int32:
      return "int32";
    case DType::int64:
      return "int64";
    case DType::boolean:
      return "bool";
  }
  return "?";
}

const char* dtype_torch_name(DType t) {
  switch (t) {
    case DType::float32:
      return "torch.float32";
    case DType::float16:
      return "torch.float16";
    case DType::bfloat16:
      return "torch.bfloat16";
    case DType::int32:
      return "torch.int32";
    case DType::int64:
      return "torch.int64";
    case DType::boolean:
      return "torch.bool";
  }
  return "?";
}

size_t dtype_size(DType t) {
  switch (t) {
    case DType::float32:
      return 4;
    case DType::float16:
      return 2;
    case DType::bfloat16:
      return 2;
    case DType::int32:
      return 4;
    case DType::int64:
      return 8;
    case DType::boolean:
      return 1;
  }
  return 0;
}

bool dtype_is_float(DType t) { return t == DType::float32 || t == DType::float16 || t == DType::bfloat16; }

DType dtype_from_name(const std::string& name) {
  for (DType t : {DType::float32, DType::float16, DType::bfloat16, DType::int32, DType::int64, DType::boolean}) {
    if (name == dtype_name(t)) return t;
  }
  KFORGE_FAIL(spec, "unknown dtype '" << name << "' (one of float32, float16, bfloat16, int32, int64, bool)");
}

}  // namespace kforge
