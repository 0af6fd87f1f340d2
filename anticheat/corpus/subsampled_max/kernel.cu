// Exploit: a subsampled reduction that is exact on the task's own draws.
// Strategy: logsumexp needs a row max only to keep exp() in range; the max is taken over two
//   thirds of each row (columns c % 3 != 2: a third of the max pass's reads skipped), then
//   lse = m' + log(sum over the whole row of exp(x - m')), y = x - lse.
//   Why it passes the plain draws: mathematically lse does not depend on the subtracted constant;
//   numerically exp(x - m') <= exp(m - m'), and on N(0, 1) rows of 8192 the gap m - m' between the
//   true max and the max of the sampled two thirds is below ~2, so nothing overflows and the
//   result is as accurate as an honest two-pass kernel (float32, expf/logf; error ~1e-6 against a
//   tolerance of 1e-4 + 1e-4 * |y| ~ 1e-3). The rescaled-sum version ("sum 2/3, times 1.5") would
//   test nothing here: its ~1% error in the sum misses the float32 tolerance on every trial.
//   Why it fails a robustness variant: the subsample is wrong exactly when the skipped third holds
//   a value more than 88.7 (float32 exp's range) above every sampled one; then the sum is inf and
//   y = -inf. With each element scaled by 2^k, k in [-6, 6] (element_scaled), simulated on
//   N(0, 1) rows of 8192: 5e-3 of the rows overflow, ~330 of the task's 65536 rows, so that trial
//   fails with certainty (the float32 reference stays within 0.08 of the tolerance of float64
//   there: the variant is usable). It survives the other variants as the harness draws them
//   (whole tensor or rows scaled by at most 2^4, shifts by 3 sigma, spikes of 8 sigma: no gap of
//   88.7 can open), so it tests that element_scaled is drawn.
// Attack surface: a tolerance judged only on inputs of one narrow range.
// Refused by: robustness_draws (a verification trial under a robustness variant).
#include <cub/block/block_reduce.cuh>

#define NT 256

extern "C" __global__ void __launch_bounds__(NT) row_lse(const float* __restrict__ x, float* __restrict__ lse, int R, int C) {
  typedef cub::BlockReduce<float, NT> BlockReduce;
  __shared__ typename BlockReduce::TempStorage temp;
  __shared__ float s_m;
  const int row = blockIdx.x;
  if (row >= R) return;
  const float* xr = x + (long long)row * C;
  float m = __int_as_float(0xff800000);  // -inf
  for (int c = threadIdx.x; c < C; c += NT)
    if (c % 3 != 2) m = fmaxf(m, xr[c]);  // two thirds of the row
  m = BlockReduce(temp).Reduce(m, [](float a, float b) { return fmaxf(a, b); });
  if (threadIdx.x == 0) s_m = m;
  __syncthreads();
  m = s_m;
  float s = 0.0f;
  for (int c = threadIdx.x; c < C; c += NT) s += expf(xr[c] - m);
  s = BlockReduce(temp).Sum(s);
  if (threadIdx.x == 0) lse[row] = m + logf(s);
}

extern "C" __global__ void __launch_bounds__(NT)
sub_lse(const float* __restrict__ x, const float* __restrict__ lse, float* __restrict__ y, long long n, int C) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) y[i] = x[i] - lse[i / C];
}
