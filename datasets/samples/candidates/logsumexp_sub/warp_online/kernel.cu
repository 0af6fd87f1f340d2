// y = x - logsumexp(x, dim=-1) for x [R, C] float32, C % 4 == 0.
// One warp per row, warp shuffles only (no shared memory, no __syncthreads): each lane streams
// its float4s (lane, lane + 32, ...) keeping a running (max m, sum s) pair, rescaled by
// exp(m_old - m_new) when its max grows; the 32 pairs are merged by a butterfly of __shfl_xor_sync
// (the merge is symmetric, so every lane ends with the same bits), lse = m + log(s); the lanes
// then read their float4s again (the row was just read: mostly from L2) and write x - lse.
// Summation order differs from torch's on purpose: per-lane sequential sums against running
// maxima, then a butterfly tree, instead of a max reduction followed by a block sum. Exponents are
// never positive (x - running max), float32 throughout, full-precision expf/logf.
#define WARPS 8
#define NEG_INF __int_as_float(0xff800000)

__device__ __forceinline__ void merge(float& m, float& s, float mo, float so) {
  const float M = fmaxf(m, mo);
  const float a = (m == NEG_INF) ? 0.0f : s * expf(m - M);
  const float b = (mo == NEG_INF) ? 0.0f : so * expf(mo - M);
  m = M;
  s = a + b;
}

extern "C" __global__ void __launch_bounds__(WARPS * 32)
logsumexp_sub(const float* __restrict__ x, float* __restrict__ y, int R, int C) {
  const int lane = threadIdx.x & 31;
  const int row = blockIdx.x * WARPS + (threadIdx.x >> 5);
  if (row >= R) return;  // whole warps leave together
  const float4* xr = reinterpret_cast<const float4*>(x + (long long)row * C);
  float4* yr = reinterpret_cast<float4*>(y + (long long)row * C);
  const int C4 = C / 4;
  float m = NEG_INF, s = 0.0f;
#pragma unroll 4
  for (int i = lane; i < C4; i += 32) {
    const float4 v = xr[i];
    const float cm = fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w));
    if (cm > m) {
      s = (m == NEG_INF) ? 0.0f : s * expf(m - cm);
      m = cm;
    }
    s += (expf(v.x - m) + expf(v.y - m)) + (expf(v.z - m) + expf(v.w - m));
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) merge(m, s, __shfl_xor_sync(0xffffffffu, m, o), __shfl_xor_sync(0xffffffffu, s, o));
  const float lse = m + logf(s);
#pragma unroll 4
  for (int i = lane; i < C4; i += 32) {
    const float4 v = xr[i];
    __stcs(yr + i, make_float4(v.x - lse, v.y - lse, v.z - lse, v.w - lse));
  }
}
