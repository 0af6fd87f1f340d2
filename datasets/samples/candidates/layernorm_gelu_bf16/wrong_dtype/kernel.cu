// BUG (deliberate): x is bfloat16 but this kernel reinterprets its bits as IEEE half (__half),
// so every input value is garbage (e.g. bf16 1.0 = 0x3F80 read as half is 1.875). Otherwise a correct
// fused LayerNorm + GELU kernel (512 threads x 8 elements per row).
// One block of 512 threads per row; each thread keeps 8 elements (one 16-byte load) in registers,
// so x is read once and act written once. Mean and variance (two-pass, biased) via cub::BlockReduce.
// Requires H <= 512 * 8 = 4096 (the task has H = 4096).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cub/block/block_reduce.cuh>

#define LN_THREADS 512
#define LN_VEC 8

extern "C" __global__ void __launch_bounds__(LN_THREADS)
layernorm_gelu_wrong_dtype(const void* __restrict__ x_raw, const __nv_bfloat16* __restrict__ w,
                    const __nv_bfloat16* __restrict__ b, __nv_bfloat16* __restrict__ y, int T, int H) {
  typedef cub::BlockReduce<float, LN_THREADS> BlockReduce;
  __shared__ typename BlockReduce::TempStorage temp;
  __shared__ float s_mean, s_rstd;

  const int row = blockIdx.x;
  if (row >= T) return;
  const __half* xr = reinterpret_cast<const __half*>(x_raw) + (long long)row * H;  // wrong element type
  __nv_bfloat16* yr = y + (long long)row * H;
  const int c0 = threadIdx.x * LN_VEC;  // first column of this thread
  const bool vec_ok = (H % LN_VEC) == 0;

  float v[LN_VEC];
  if (vec_ok && c0 + LN_VEC <= H) {
    uint4 raw = *reinterpret_cast<const uint4*>(xr + c0);
    const __half* e = reinterpret_cast<const __half*>(&raw);
#pragma unroll
    for (int j = 0; j < LN_VEC; ++j) v[j] = __half2float(e[j]);
  } else {
#pragma unroll
    for (int j = 0; j < LN_VEC; ++j) v[j] = (c0 + j < H) ? __half2float(xr[c0 + j]) : 0.0f;
  }

  // mean
  float s = 0.0f;
#pragma unroll
  for (int j = 0; j < LN_VEC; ++j) s += v[j];
  float tot = BlockReduce(temp).Sum(s);
  if (threadIdx.x == 0) s_mean = tot / (float)H;
  __syncthreads();
  const float mean = s_mean;

  // biased variance, from deviations (only the valid columns count)
  float q = 0.0f;
#pragma unroll
  for (int j = 0; j < LN_VEC; ++j) {
    float d = v[j] - mean;
    q += (c0 + j < H) ? d * d : 0.0f;
  }
  float qtot = BlockReduce(temp).Sum(q);  // temp reuse is safe: the __syncthreads above separates the two uses
  if (threadIdx.x == 0) s_rstd = rsqrtf(qtot / (float)H + 1e-5f);
  __syncthreads();
  const float rstd = s_rstd;

  float r[LN_VEC];
#pragma unroll
  for (int j = 0; j < LN_VEC; ++j) {
    int c = c0 + j;
    if (c < H) {
      float ln = (v[j] - mean) * rstd * __bfloat162float(w[c]) + __bfloat162float(b[c]);
      r[j] = 0.5f * ln * (1.0f + erff(ln * 0.7071067811865476f));  // exact GELU
    } else {
      r[j] = 0.0f;
    }
  }
  if (vec_ok && c0 + LN_VEC <= H) {
    uint4 raw;
    __nv_bfloat16* e = reinterpret_cast<__nv_bfloat16*>(&raw);
#pragma unroll
    for (int j = 0; j < LN_VEC; ++j) e[j] = __float2bfloat16(r[j]);
    *reinterpret_cast<uint4*>(yr + c0) = raw;
  } else {
#pragma unroll
    for (int j = 0; j < LN_VEC; ++j)
      if (c0 + j < H) yr[c0 + j] = __float2bfloat16(r[j]);
  }
}
