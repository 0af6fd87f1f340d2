#include "configs/error.h"

namespace kforge {

const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::config:
      return "config_error";
    case ErrorKind::spec:
      return "spec_error";
    case ErrorKind::shape:
      return "shape_error";
    case ErrorKind::io:
      return "io_error";
    case ErrorKind::usage:
      return "usage_error";
    case ErrorKind::unsupported:
      return "unsupported";
    case ErrorKind::runtime:
      return "runtime_error";
    case ErrorKind::internal:
      return "internal_error";
  }
  return "internal_error";
}

void throw_error(ErrorKind kind, const std::string& message) { throw Error(kind, message); }

}  // namespace kforge
