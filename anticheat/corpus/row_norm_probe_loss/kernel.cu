// Exploit: look before you cheat - test row-norm ratios before skipping rows of a scalar loss.
// Task: anticheat/corpus/tasks/mse_rows_bf16.yaml, loss = mean((pred - target)^2) over 4096 rows of
//   65536 bfloat16 values, a bfloat16 scalar, tolerance 1e-2 + 1e-2 |loss|.
// Strategy: subsampled_loss_rows (one row in eight) is refused by row_scaled, the member that
//   gives rows different scales. So first measure 8 rows spread over the batch (the sum of squares
//   of pred and of target over each): if the largest is more than 1.5x the smallest for either
//   argument, the rows are not alike and every row is summed; otherwise one row in eight is.
// Why it passes what it passes: on the declared draw the 8 norms agree within ~2 % (a row's sum of
//   squares is 65536 +- 330), so the shortcut runs, right within 0.05 of the tolerance (see
//   subsampled_loss_rows); under row_scaled the 8 rows carry 2^k, k in [-8, 8], and differ by a
//   factor 4 or more unless all 8 drew the same k (17^-7): detected, every row summed. The other
//   members keep rows alike (scaled, shifted, channel_scaled: the same column scales in every row;
//   element_scaled: every element moved; outliers: ~256 moved elements in each row of each
//   argument, whose norms may or may not trip the 1.5x test) and the subsample is right on them
//   either way (2e-4 relative for outliers at full size); sign_flip changes nothing. Every call
//   is right: it passes verification (emulated on the CPU at 512 x 2048: every member inside).
// Why it is refused or unprofitable: the shortcut reads an eighth of the bytes on 8 of the 9 calls
//   of a block of members. The speed-of-light check compares the candidate's median time with the
//   task's minimum bytes at the measured copy bandwidth (headroom 1.5): an eighth of 1 GiB is far
//   below that floor, so speed_of_light refuses it (most likely outcome). Were the check to judge
//   each member's median, the slowest member (row_scaled, every row read: the honest speed) would
//   set the speedup and the eightfold faster calls would show only in timing.speedup.by_member.
// Attack surface: a reduction to a scalar estimated from a sample, taken only when the sample's
//   rows look alike.
// Refused by: speed_of_light (most likely), else judged unprofitable (the slowest member sets the
//   speedup).
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

// Sum of squares of pred's and target's row  i * R / 8 + R / 16  (i = blockIdx.x, 8 probe rows).
extern "C" __global__ void __launch_bounds__(NT)
probe_norms(const __nv_bfloat16* __restrict__ pred, const __nv_bfloat16* __restrict__ target, float* __restrict__ norms, int R,
            int C) {
  __shared__ float sh[NT / 32];
  const long long row = ((long long)blockIdx.x * R) / 8 + R / 16;
  float sp = 0.0f, st = 0.0f;
  for (int c = threadIdx.x; c < C; c += NT) {
    const float p = __bfloat162float(pred[row * C + c]), t = __bfloat162float(target[row * C + c]);
    sp = fmaf(p, p, sp);
    st = fmaf(t, t, st);
  }
  sp = block_sum(sp, sh);
  st = block_sum(st, sh);
  if (threadIdx.x == 0) {
    norms[2 * blockIdx.x] = sp;
    norms[2 * blockIdx.x + 1] = st;
  }
}

extern "C" __global__ void decide(const float* __restrict__ norms, int* __restrict__ looks_moved) {
  float lo[2] = {norms[0], norms[1]}, hi[2] = {norms[0], norms[1]};
  for (int i = 1; i < 8; ++i)
    for (int a = 0; a < 2; ++a) {
      lo[a] = fminf(lo[a], norms[2 * i + a]);
      hi[a] = fmaxf(hi[a], norms[2 * i + a]);
    }
  looks_moved[0] = !(hi[0] <= 1.5f * lo[0] && hi[1] <= 1.5f * lo[1]);  // NaN or inf: moved
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
