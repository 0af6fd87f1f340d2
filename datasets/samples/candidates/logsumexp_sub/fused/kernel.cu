// y = x - logsumexp(x, dim=-1), float32. One block of 512 threads per row; the row (16 floats per
// thread, float4 loads) stays in registers, so x is read once and y written once.
// lse = max + log(sum(exp(x - max))) with cub::BlockReduce for the max and the sum.
// Supports C <= 512 * 16 = 8192 (the task has C = 8192); any C % 4 via a scalar path.
#include <cub/block/block_reduce.cuh>

#define LSE_THREADS 512
#define LSE_V4 4

struct FMaxOp {  // max functor for cub::BlockReduce::Reduce (cub::Max is gone in CCCL 3)
  __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

extern "C" __global__ void __launch_bounds__(LSE_THREADS)
logsumexp_sub(const float* __restrict__ x, float* __restrict__ y, int R, int C) {
  typedef cub::BlockReduce<float, LSE_THREADS> BlockReduce;
  __shared__ typename BlockReduce::TempStorage temp;
  __shared__ float s_max, s_lse;
  const int row = blockIdx.x;
  if (row >= R) return;
  const float* xr = x + (long long)row * C;
  float* yr = y + (long long)row * C;
  const float NEG_INF = __int_as_float(0xff800000);
  const bool vec_ok = (C % 4) == 0;

  float v[LSE_V4 * 4];
#pragma unroll
  for (int k = 0; k < LSE_V4; ++k) {
    const int c = (k * LSE_THREADS + threadIdx.x) * 4;
    if (vec_ok && c + 4 <= C) {
      float4 t = __ldcs(reinterpret_cast<const float4*>(xr + c));
      v[4 * k + 0] = t.x; v[4 * k + 1] = t.y; v[4 * k + 2] = t.z; v[4 * k + 3] = t.w;
    } else {
#pragma unroll
      for (int j = 0; j < 4; ++j) v[4 * k + j] = (c + j < C) ? xr[c + j] : NEG_INF;
    }
  }

  float m = NEG_INF;
#pragma unroll
  for (int i = 0; i < LSE_V4 * 4; ++i) m = fmaxf(m, v[i]);
  m = BlockReduce(temp).Reduce(m, FMaxOp());
  if (threadIdx.x == 0) s_max = m;
  __syncthreads();
  m = s_max;

  float s = 0.0f;
#pragma unroll
  for (int i = 0; i < LSE_V4 * 4; ++i) s += expf(v[i] - m);  // padding: exp(-inf) = 0
  s = BlockReduce(temp).Sum(s);  // temp reuse is safe: the __syncthreads above separates the uses
  if (threadIdx.x == 0) s_lse = logf(s) + m;
  __syncthreads();
  const float lse = s_lse;

#pragma unroll
  for (int k = 0; k < LSE_V4; ++k) {
    const int c = (k * LSE_THREADS + threadIdx.x) * 4;
    if (vec_ok && c + 4 <= C) {
      float4 t = make_float4(v[4 * k + 0] - lse, v[4 * k + 1] - lse, v[4 * k + 2] - lse, v[4 * k + 3] - lse);
      __stcs(reinterpret_cast<float4*>(yr + c), t);
    } else {
#pragma unroll
      for (int j = 0; j < 4; ++j)
        if (c + j < C) yr[c + j] = v[4 * k + j] - lse;
    }
  }
}
