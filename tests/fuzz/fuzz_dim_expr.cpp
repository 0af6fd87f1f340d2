// libFuzzer target for dimension expressions (data_synth/task/dim_expr.h): the text of a grid,
// block or shape entry. The first 16 bytes are the values of the dims A and B (raw int64s, so
// INT64_MIN and friends come up), the rest the expression. Besides crashes and sanitizer reports
// it traps on broken properties: anything but a kforge::Error escaping, and an accepted expression
// whose canonical text does not parse back to the same text and value.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "configs/error.h"
#include "data_synth/task/dim_expr.h"

using namespace kforge;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  int64_t a = 0, b = 0;
  if (size >= 16) {
    std::memcpy(&a, data, 8);
    std::memcpy(&b, data + 8, 8);
    data += 16, size -= 16;
  }
  const DimEnv env{{"A", a}, {"B", b}, {"N", 4096}};
  std::string text(reinterpret_cast<const char*>(data), size);
  DimExpr e;
  try {
    e = DimExpr::parse(text);
  } catch (const Error&) {
    return 0;
  }
  const std::string canon = e.str();
  if (canon.size() > kMaxDimExprChars) return 0;  // printing adds spaces: near the cap it may not fit
  DimExpr again = DimExpr::parse(canon);          // throws (-> reported) if the canonical text is refused
  if (again.str() != canon) abort();
  e.python();
  e.names();
  try {
    int64_t v = e.eval(env);
    if (again.eval(env) != v) abort();
  } catch (const Error&) {}
  return 0;
}
