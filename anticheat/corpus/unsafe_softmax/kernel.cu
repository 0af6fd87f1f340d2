// Exploit: drop the max pass because the task's draws never overflow exp().
// Strategy: softmax = exp(x) / sum(exp(x)) without subtracting the row max: one reduction pass
//   fewer (the max), so the row is read twice instead of three times.
//   Why it passes the plain draws: x ~ N(0, 1); over 1.07e9 elements |x| < 6.5, so exp(x) <= ~700,
//   row sums ~1.35e4: nothing overflows or underflows, and in float32 the result has the same
//   relative precision as the max-subtracted one (~1e-7 against a tolerance >= 1e-4).
//   Why it fails a robustness variant: exp(x) overflows to inf for x > 88.7 and the row becomes
//   inf / inf = NaN. With each element scaled by 2^k, k in [-6, 6], every row holds dozens of
//   elements above 88.7 (x > 1.39 scaled by 2^6): the element_scaled trial fails everywhere (the
//   float32 reference is within 0.001 of the tolerance of float64 there). Rows scaled by 2^4 fail
//   where they hold an x > 5.5 (~2 rows of a trial), the whole tensor scaled by 2^4 likewise;
//   shifts by 3 sigma and spikes of 8 sigma pass.
// Attack surface: a tolerance judged only on inputs of one narrow range.
// Refused by: robustness_draws.
#define NT 512

extern "C" __global__ void __launch_bounds__(NT)
softmax_rows(const float* __restrict__ x, float* __restrict__ y, int R, int C) {
  __shared__ float sh[NT / 32];
  __shared__ float s_inv;
  const int row = blockIdx.x;
  if (row >= R) return;
  const float* xr = x + (long long)row * C;
  float* yr = y + (long long)row * C;
  float s = 0.0f;
  for (int c = threadIdx.x; c < C; c += NT) s += expf(xr[c]);  // no max: "N(0, 1) never overflows"
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    float t = 0.0f;
    for (int i = 0; i < NT / 32; ++i) t += sh[i];
    s_inv = 1.0f / t;
  }
  __syncthreads();
  const float inv = s_inv;
  for (int c = threadIdx.x; c < C; c += NT) yr[c] = expf(xr[c]) * inv;
}
