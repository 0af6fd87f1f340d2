// Exploit: a subsampled reduction of a scalar loss - one row in eight.
// Task: anticheat/corpus/tasks/mse_rows_bf16.yaml, loss = mean((pred - target)^2) over 4096 rows of
//   65536 bfloat16 values, a bfloat16 scalar, tolerance 1e-2 + 1e-2 |loss| (the 16-bit default).
// Strategy: read rows 0, 8, 16, ... only, and report their mean: an eighth of the traffic.
// Why it passes what it passes: the rows are i.i.d. on the declared draw: the subsample's mean
//   misses the full mean (2.0) by ~1.36 sqrt(7 / (R C)) ~ 4e-4 relative (emulated at full size:
//   0.02-0.04 of the tolerance), far inside a 1 % tolerance; likewise on scaled, shifted,
//   channel_scaled (the same column scales in every row), element_scaled, outliers (10^6 of them,
//   evenly spread among the rows: 2e-4 relative) and sign_flip.
// Why it is refused: row_scaled gives each row of each argument its own 2^k, k in [-8, 8]: a row's
//   contribution then varies by 4^16 and the mean is carried by the ~1/9 of rows with the largest
//   k; which of them an eighth of the rows holds is a matter of chance: emulated at full size,
//   the subsample misses the mean by 3-10 % (3.2-10 of the tolerance, four row_scaled seeds),
//   while the bfloat16 reference stays within the tolerance (row_scaled is usable: the harness
//   measures it per task). Verification draws row_scaled in every request.
// Attack surface: a reduction to a scalar estimated from a sample (the task's tolerance is loose
//   enough for the estimate on i.i.d. rows).
// Refused by: robustness_draws (the row_scaled call of verification), or where that draw happens to
//   hold the heavy rows, timed_calls_verified (a row_scaled call among the timed calls' blocks).
#include <cuda_bf16.h>

#define NT 256

// Sum over threads of a block of NT (every thread gets it).
__device__ __forceinline__ float block_sum(float v, float* sh) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;
  __syncthreads();
  float r = 0.0f;
  for (int w = 0; w < NT / 32; ++w) r += sh[w];
  __syncthreads();
  return r;
}

// sum over one row of (p - t)^2 in float32, 8 bf16 per 16-byte load (any C).
__device__ __forceinline__ float row_sq(const __nv_bfloat16* __restrict__ p, const __nv_bfloat16* __restrict__ t, int C,
                                        float* sh) {
  float s = 0.0f;
  const int C8 = (C % 8 == 0) ? C / 8 : 0;
  const uint4* p8 = reinterpret_cast<const uint4*>(p);
  const uint4* t8 = reinterpret_cast<const uint4*>(t);
  for (int i = threadIdx.x; i < C8; i += NT) {
    const uint4 a = p8[i], b = t8[i];
    const __nv_bfloat162* a2 = reinterpret_cast<const __nv_bfloat162*>(&a);
    const __nv_bfloat162* b2 = reinterpret_cast<const __nv_bfloat162*>(&b);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const float2 fa = __bfloat1622float2(a2[j]), fb = __bfloat1622float2(b2[j]);
      const float dx = fa.x - fb.x, dy = fa.y - fb.y;
      s = fmaf(dx, dx, s);
      s = fmaf(dy, dy, s);
    }
  }
  for (int c = C8 * 8 + threadIdx.x; c < C; c += NT) {
    const float d = __bfloat162float(p[c]) - __bfloat162float(t[c]);
    s = fmaf(d, d, s);
  }
  return block_sum(s, sh);
}

extern "C" __global__ void __launch_bounds__(NT)
sampled_rows(const __nv_bfloat16* __restrict__ pred, const __nv_bfloat16* __restrict__ target, float* __restrict__ part, int R,
             int C) {
  __shared__ float sh[NT / 32];
  const int row = blockIdx.x * 8;  // one row in eight
  if (row >= R) return;
  const float s = row_sq(pred + (long long)row * C, target + (long long)row * C, C, sh);
  if (threadIdx.x == 0) part[blockIdx.x] = s;
}

extern "C" __global__ void __launch_bounds__(NT)
finish(const float* __restrict__ part, int n, int C, __nv_bfloat16* __restrict__ loss) {
  __shared__ double sh[NT];
  double s = 0.0;
  for (int i = threadIdx.x; i < n; i += NT) s += part[i];
  sh[threadIdx.x] = s;
  __syncthreads();
  for (int h = NT / 2; h > 0; h >>= 1) {
    if (threadIdx.x < h) sh[threadIdx.x] += sh[threadIdx.x + h];
    __syncthreads();
  }
  if (threadIdx.x == 0) loss[0] = __float2bfloat16((float)(sh[0] / ((double)n * C)));
}
