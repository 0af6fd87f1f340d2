// y = softmax(x, dim=-1) for x [R, C] float32, C % 4 == 0 (the task: C = 8192).
// Online softmax, one warp per row (8 rows per 256-thread block): each lane walks the row's float4s
// at a stride of 32 and keeps a running (max m, sum l) pair, rescaling l by exp(m_old - m_new) when
// its max grows; a butterfly of __shfl_xor merges the 32 pairs (merge(a, b) and merge(b, a) give
// the same bits, so every lane ends with the same m and l); a second read of the row (mostly from
// L2) writes exp(x - m) / l. No shared memory, no block barrier. Every exp has a non-positive
// argument: scaled, shifted or spiked rows cannot overflow. float32, full-precision expf.
#define WARPS 8
#define NEG_INF __int_as_float(0xff800000)

__device__ __forceinline__ void merge(float& m, float& l, float mo, float lo) {
  const float M = fmaxf(m, mo);
  const float a = (m == NEG_INF) ? 0.0f : l * expf(m - M);
  const float b = (mo == NEG_INF) ? 0.0f : lo * expf(mo - M);
  m = M;
  l = a + b;
}

extern "C" __global__ void __launch_bounds__(32 * WARPS) softmax_rows(const float* __restrict__ x, float* __restrict__ y, int R, int C) {
  const int lane = threadIdx.x & 31;
  const int row = blockIdx.x * WARPS + (threadIdx.x >> 5);
  if (row >= R) return;  // a whole warp leaves together: no barrier below waits for it
  const float4* xr = reinterpret_cast<const float4*>(x + (long long)row * C);
  float4* yr = reinterpret_cast<float4*>(y + (long long)row * C);
  const int C4 = C / 4;

  float m = NEG_INF, l = 0.0f;
  for (int i = lane; i < C4; i += 32) {
    const float4 v = xr[i];
    const float cm = fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w));
    if (cm > m) {
      l = (m == NEG_INF) ? 0.0f : l * expf(m - cm);
      m = cm;
    }
    l += (expf(v.x - m) + expf(v.y - m)) + (expf(v.z - m) + expf(v.w - m));
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float mo = __shfl_xor_sync(0xffffffffu, m, o);
    const float lo = __shfl_xor_sync(0xffffffffu, l, o);
    merge(m, l, mo, lo);
  }
  const float inv = 1.0f / l;
  for (int i = lane; i < C4; i += 32) {
    const float4 v = xr[i];
    __stcs(yr + i, make_float4(expf(v.x - m) * inv, expf(v.y - m) * inv, expf(v.z - m) * inv, expf(v.w - m) * inv));
  }
}
