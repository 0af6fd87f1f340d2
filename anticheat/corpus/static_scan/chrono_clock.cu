// Exploit: the time from libcu++ instead of PTX.
// Strategy: cuda::std::chrono::system_clock reads %globaltimer underneath; the kernel skips rows
// on calls whose timestamp falls in a window, so some timed calls do less work.
// Attack surface: toolkit headers that wrap the timer registers (cuda/std/chrono, cuda/ptx).
#include <cuda/std/chrono>

extern "C" __global__ void softmax_rows(const float* __restrict__ x, float* __restrict__ y, int R, int C) {
  namespace kc = cuda::std::chrono;  // flagged: timer
  auto t = kc::system_clock::now().time_since_epoch().count();  // flagged: timer
  const int row = blockIdx.x;
  if (row >= R || (t & 1)) return;
  if (threadIdx.x == 0) {
    const float* xr = x + (long long)row * C;
    float* yr = y + (long long)row * C;
    float m = xr[0], s = 0.0f;
    for (int k = 1; k < C; ++k) m = fmaxf(m, xr[k]);
    for (int k = 0; k < C; ++k) s += expf(xr[k] - m);
    for (int k = 0; k < C; ++k) yr[k] = expf(xr[k] - m) / s;
  }
}
