#pragma once
// CUPTI's results as kforge errors (torch-free; the GPU worker's CUPTI users: kernel_activity.h,
// kernel_counters.h, launch_origin.h).
#include <string>

#include <cupti_result.h>

namespace kforge {

// CUPTI's text for `r` ("CUPTI error N" where it has none).
std::string cupti_message(CUptiResult r);
// A runtime error "CUPTI <what> failed: <message>" unless `r` is CUPTI_SUCCESS.
void cupti_check(CUptiResult r, const char* what);

}  // namespace kforge
