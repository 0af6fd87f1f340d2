#include "env/judge/cupti_error.h"

#include <cupti.h>

#include "configs/error.h"

namespace kforge {

std::string cupti_message(CUptiResult r) {
  const char* s = nullptr;
  if (cuptiGetResultString(r, &s) != CUPTI_SUCCESS || !s) return "CUPTI error " + std::to_string(static_cast<int>(r));
  return s;
}

void cupti_check(CUptiResult r, const char* what) {
  if (r == CUPTI_SUCCESS) return;
  KFORGE_FAIL(runtime, "CUPTI " << what << " failed: " << cupti_message(r));
}

}  // namespace kforge
