#pragma once
// Wall-time figures for reports and logs: milliseconds since a point on the monotonic clock.
#include <chrono>

namespace kforge {

inline double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace kforge
