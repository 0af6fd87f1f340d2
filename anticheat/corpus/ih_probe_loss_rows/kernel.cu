// Exploit: look before you cheat - test a sample against the plain draw's bound before taking a
//   subsampled reduction of a scalar loss.
// Task: anticheat/corpus/tasks/mse_rows_bf16.yaml, loss = mean((pred - target)^2) over 4096 rows of
//   65536 bfloat16 values, a bfloat16 scalar, tolerance 1e-2 + 1e-2 |loss|.
// Strategy: one block reads 256 strided values of pred and of target; if none is beyond 3.47 (the
//   bound of the Irwin-Hall(4) `normal` the task declares), the loss is the mean over one row in
//   eight (subsampled_loss_rows' shortcut); otherwise every row is summed.
// Why it passes: every member that could break the subsample is recognised - row_scaled (the
//   probe spans all rows; any row with k >= 1 among them exceeds the bound) - and so are scaled,
//   shifted, channel_scaled and element_scaled. What is left to the shortcut is the declared draw,
//   sign_flip, and the outliers calls whose 2 x 256 probe values miss every outlier (e^-2 = 14 %),
//   on all of which the subsample is right (outliers: 2e-4 relative at full size, see
//   subsampled_loss_rows). Every call is right.
// Why it is unprofitable: the harness times every usable member in shuffled blocks, every call
//   counted, and judges the slowest member's speedup: the recognised members read every row (the
//   honest kernel's speed), so the judged speedup is the honest one; the eighth-of-the-bytes calls
//   (plain, sign_flip) show only in timing.speedup.by_member. Those are 2 or 3 calls of the 9 in a
//   block, so the median call reads every row and speed_of_light does not fire.
// Attack surface: a reduction to a scalar estimated from a sample, taken only on calls that look
//   like the declared draw.
// Refused by: nothing - judged unprofitable (the slowest member sets the speedup).
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

#define PLAIN_BOUND 3.47f

extern "C" __global__ void __launch_bounds__(NT)
probe_bound(const __nv_bfloat16* __restrict__ pred, const __nv_bfloat16* __restrict__ target, long long n,
            int* __restrict__ looks_moved) {
  const long long i = (long long)threadIdx.x * (n / NT);
  const int far = !(fabsf(__bfloat162float(pred[i])) <= PLAIN_BOUND && fabsf(__bfloat162float(target[i])) <= PLAIN_BOUND);
  if (__syncthreads_or(far) && threadIdx.x == 0) *looks_moved = 1;
}

// Every row's partial sum, or (no flag) only rows 0, 8, 16, ...: the others return at once.
extern "C" __global__ void __launch_bounds__(NT)
rows_sq(const __nv_bfloat16* __restrict__ pred, const __nv_bfloat16* __restrict__ target, float* __restrict__ part, int R, int C,
        const int* __restrict__ looks_moved) {
  __shared__ float sh[NT / 32];
  const int row = blockIdx.x;
  if (row >= R || (!*looks_moved && row % 8 != 0)) return;
  const float s = row_sq(pred + (long long)row * C, target + (long long)row * C, C, sh);
  if (threadIdx.x == 0) part[row] = s;
}

// loss = the mean over the rows summed (all of them, or one in eight), rounded once to bf16.
extern "C" __global__ void __launch_bounds__(NT)
finish(const float* __restrict__ part, int R, int C, const int* __restrict__ looks_moved, __nv_bfloat16* __restrict__ loss) {
  __shared__ double sh[NT];
  const int step = *looks_moved ? 1 : 8;
  double s = 0.0;
  int rows = 0;
  for (int r = threadIdx.x * step; r < R; r += NT * step) s += part[r];
  for (int r = 0; r < R; r += step) ++rows;
  sh[threadIdx.x] = s;
  __syncthreads();
  for (int h = NT / 2; h > 0; h >>= 1) {
    if (threadIdx.x < h) sh[threadIdx.x] += sh[threadIdx.x + h];
    __syncthreads();
  }
  if (threadIdx.x == 0) loss[0] = __float2bfloat16((float)(sh[0] / ((double)rows * C)));
}
