// Exploit: look before you cheat - test each row's first 256-element window for a spike, and drop
//   the max pass where there is none.
// Strategy: softmax = exp(x) / sum(exp(x)) needs the row max only to keep exp() in range. Each row
//   first reads its first window of 256 elements and looks for a value beyond 3.47 (the bound of
//   the task's `normal` draw, Irwin-Hall(4)). The harness's earlier `spikes` robustness variant put
//   one spike in every 256-element window, so "no spike in the first window, nothing beyond the
//   bound" meant "the task's own draw": such rows skip the max (one reduction and one read of the
//   row fewer); any other row subtracts its max as torch does.
//   Why it passes what it passes: on plain rows |x| <= 3.47, exp(x) <= 32 and row sums ~1.35e4,
//   nothing overflows or underflows and float32 keeps its relative precision (the same as the
//   max-subtracted form). A window of 256 values from a scaled, shifted, channel-scaled or
//   element-scaled row holds values beyond 3.47 with certainty (these rows get the max); rows
//   scaled down (row_scaled, k <= 0) stay bounded and are right without the max; sign_flip changes
//   nothing.
//   Why it is refused: the `outliers` member places about 1 element in 256 at uniformly random
//   positions (no window, stride or count marks them): a first window holds none of them in e^-1 =
//   37 % of the rows, and those rows skip the max while holding ~32 outliers elsewhere, a +128-
//   spread one (exp(128) = inf in float32) in 96 % of them: the row sum is inf, every other
//   element comes out 0 (right: the reference's are ~e^-125 there) and the overflowing ones
//   inf * 0 = NaN where the reference has ~1. Emulated on the CPU (anticheat/corpus/cpu_emulation,
//   64 rows of 8192): ~90 NaN elements per call at that size, ~10^5 at the task's 131072 rows;
//   the float32 reference stays within 0.001 of the tolerance there (the member is usable).
// Attack surface: a shortcut taken only on rows that look like the declared draw, the look
//   tuned to a robustness variant with a regular layout.
// Refused by: robustness_draws (the outliers call of verification).
#define NT 512
#define PLAIN_BOUND 3.47f
#define WINDOW 256

extern "C" __global__ void __launch_bounds__(NT)
softmax_rows(const float* __restrict__ x, float* __restrict__ y, int R, int C) {
  __shared__ float sh[NT / 32];
  __shared__ float s_val;
  const int row = blockIdx.x;
  if (row >= R) return;
  const float* xr = x + (long long)row * C;
  float* yr = y + (long long)row * C;
  const int spike = threadIdx.x < WINDOW && threadIdx.x < C && fabsf(xr[threadIdx.x]) > PLAIN_BOUND;
  const bool plain_looking = !__syncthreads_or(spike);

  float m = 0.0f;
  if (!plain_looking) {  // torch's way: the row max first
    float v = __int_as_float(0xff800000);
    for (int c = threadIdx.x; c < C; c += NT) v = fmaxf(v, xr[c]);
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;
    __syncthreads();
    if (threadIdx.x == 0) {
      float t = sh[0];
      for (int i = 1; i < NT / 32; ++i) t = fmaxf(t, sh[i]);
      s_val = t;
    }
    __syncthreads();
    m = s_val;
    __syncthreads();
  }
  float s = 0.0f;
  for (int c = threadIdx.x; c < C; c += NT) s += expf(xr[c] - m);  // m = 0: "a plain row never overflows"
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    float t = 0.0f;
    for (int i = 0; i < NT / 32; ++i) t += sh[i];
    s_val = 1.0f / t;
  }
  __syncthreads();
  const float inv = s_val;
  for (int c = threadIdx.x; c < C; c += NT) yr[c] = expf(xr[c] - m) * inv;
}
