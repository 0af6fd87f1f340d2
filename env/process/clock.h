#pragma once
// Wall-time figures for reports and logs: milliseconds on the monotonic clock, since a point or
// between two.
#include <chrono>

namespace kforge {

using Clock = std::chrono::steady_clock;  // the one clock of wall-time figures

inline double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

inline double ms_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

}  // namespace kforge
