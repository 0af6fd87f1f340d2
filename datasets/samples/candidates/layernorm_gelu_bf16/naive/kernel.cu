// LayerNorm + exact GELU, bfloat16. One block of 256 threads per row; three strided passes over
// the row in global memory (sum, sum of squared deviations, output), shared-memory tree reductions.
#include <cuda_bf16.h>

__device__ float block_sum_256(float v, float* sh) {
  sh[threadIdx.x] = v;
  __syncthreads();
  for (int s = 128; s > 0; s >>= 1) {
    if (threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
    __syncthreads();
  }
  float r = sh[0];
  __syncthreads();  // everyone has read sh[0] before sh is reused
  return r;
}

extern "C" __global__ void layernorm_gelu_naive(const __nv_bfloat16* x, const __nv_bfloat16* w, const __nv_bfloat16* b,
                                                __nv_bfloat16* y, int T, int H) {
  __shared__ float sh[256];
  const int row = blockIdx.x;
  if (row >= T) return;
  const __nv_bfloat16* xr = x + (long long)row * H;
  __nv_bfloat16* yr = y + (long long)row * H;

  float s = 0.0f;
  for (int c = threadIdx.x; c < H; c += 256) s += __bfloat162float(xr[c]);
  const float mean = block_sum_256(s, sh) / (float)H;

  float q = 0.0f;
  for (int c = threadIdx.x; c < H; c += 256) {
    float d = __bfloat162float(xr[c]) - mean;
    q += d * d;
  }
  const float var = block_sum_256(q, sh) / (float)H;
  const float rstd = rsqrtf(var + 1e-5f);

  for (int c = threadIdx.x; c < H; c += 256) {
    float ln = (__bfloat162float(xr[c]) - mean) * rstd * __bfloat162float(w[c]) + __bfloat162float(b[c]);
    yr[c] = __float2bfloat16(0.5f * ln * (1.0f + erff(ln * 0.7071067811865476f)));
  }
}
