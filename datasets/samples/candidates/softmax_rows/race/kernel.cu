// BUG (deliberate): a race. The sum reduction reads the per-warp partial sums from shared memory
// without the __syncthreads() that must follow their writes, so a warp can read slots other warps
// have not written yet (stale values from another row or garbage) -> wrong normalisation.
// Otherwise identical to the fused kernel. Row-wise softmax, float32. One block of 512 threads per row; each thread keeps 4 float4
// (16 elements) of the row in registers, so x is read once and y written once.
// Stable: y = exp(x - max) / sum(exp(x - max)). Warp-shuffle + shared-memory block reductions.
// Supports C <= 512 * 16 = 8192 (the task has C = 8192); any C % 4 via a scalar path.
#define SM_THREADS 512
#define SM_WARPS (SM_THREADS / 32)
#define SM_V4 4  // float4 per thread

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

extern "C" __global__ void __launch_bounds__(SM_THREADS)
softmax_rows_race(const float* __restrict__ x, float* __restrict__ y, int R, int C) {
  __shared__ float sh_max[SM_WARPS];
  __shared__ float sh_sum[SM_WARPS];
  const int row = blockIdx.x;
  if (row >= R) return;
  const float* xr = x + (long long)row * C;
  float* yr = y + (long long)row * C;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const float NEG_INF = __int_as_float(0xff800000);
  const bool vec_ok = (C % 4) == 0;

  float v[SM_V4 * 4];
#pragma unroll
  for (int k = 0; k < SM_V4; ++k) {
    const int c = (k * SM_THREADS + threadIdx.x) * 4;  // coalesced: consecutive threads, consecutive float4
    if (vec_ok && c + 4 <= C) {
      float4 t = __ldcs(reinterpret_cast<const float4*>(xr + c));
      v[4 * k + 0] = t.x; v[4 * k + 1] = t.y; v[4 * k + 2] = t.z; v[4 * k + 3] = t.w;
    } else {
#pragma unroll
      for (int j = 0; j < 4; ++j) v[4 * k + j] = (c + j < C) ? xr[c + j] : NEG_INF;
    }
  }

  // row max
  float m = NEG_INF;
#pragma unroll
  for (int i = 0; i < SM_V4 * 4; ++i) m = fmaxf(m, v[i]);
  m = warp_max(m);
  if (lane == 0) sh_max[warp] = m;
  __syncthreads();
  m = warp_max(lane < SM_WARPS ? sh_max[lane] : NEG_INF);

  // sum of exp(x - max); padding entries are -inf -> exp = 0
  float s = 0.0f;
#pragma unroll
  for (int i = 0; i < SM_V4 * 4; ++i) {
    v[i] = expf(v[i] - m);
    s += v[i];
  }
  s = warp_sum(s);
  if (lane == 0) sh_sum[warp] = s;
  // missing __syncthreads() here: the race
  s = warp_sum(lane < SM_WARPS ? sh_sum[lane] : 0.0f);

#pragma unroll
  for (int k = 0; k < SM_V4; ++k) {
    const int c = (k * SM_THREADS + threadIdx.x) * 4;
    if (vec_ok && c + 4 <= C) {
      float4 t = make_float4(v[4 * k + 0] / s, v[4 * k + 1] / s, v[4 * k + 2] / s, v[4 * k + 3] / s);
      __stcs(reinterpret_cast<float4*>(yr + c), t);
    } else {
#pragma unroll
      for (int j = 0; j < 4; ++j)
        if (c + j < C) yr[c + j] = v[4 * k + j] / s;
    }
  }
}
