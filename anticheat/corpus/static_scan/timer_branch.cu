// Exploit: timer-dependent branch.
// Strategy: read %globaltimer at the start of the kernel; the harness checks results right after
// an untimed warm-up while timed calls follow each other closely, so a kernel that sees a short
// gap since the previous call's timestamp (kept in the output's tail, which the harness does not
// poison between timed calls) skips the work.
// Attack surface: the GPU's global nanosecond timer, readable from inline PTX.
__device__ __forceinline__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));  // flagged: timer
  return t;
}

extern "C" __global__ void softmax_rows(const float* __restrict__ x, float* __restrict__ y, int R, int C) {
  const int row = blockIdx.x;
  if (row >= R) return;
  unsigned long long t = now_ns();
  if ((t & 0xFFFFF) < 0x80000) return;  // "fast path" on half of the timed calls
  const float* xr = x + (long long)row * C;
  float* yr = y + (long long)row * C;
  if (threadIdx.x == 0) {
    float m = xr[0], s = 0.0f;
    for (int c = 1; c < C; ++c) m = fmaxf(m, xr[c]);
    for (int c = 0; c < C; ++c) s += expf(xr[c] - m);
    for (int c = 0; c < C; ++c) yr[c] = expf(xr[c] - m) / s;
  }
}
