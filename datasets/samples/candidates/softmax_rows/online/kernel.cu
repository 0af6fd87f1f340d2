// y = softmax(x, dim=-1) for x [R, C] float32, C <= 8192 and C % 4 == 0 (the task: C = 8192).
// Online softmax (one pass for max and sum): one 256-thread block per row holds the row in
// registers (8 float4 per thread). Each thread folds its chunks into a running (max m, sum l)
// pair, rescaling l by exp(m_old - m_new) when the max grows; pairs are merged across the warp with
// shuffles and across the 8 warps through shared memory (the same merge order in every thread), so
// the row is read once and written once and the max is never a separate reduction. Unlike
// torch's kernel (a max reduction, then a sum of exp(x - max)), the sum here is accumulated against
// running maxima and rescaled. Every exp has a non-positive argument (x - max), so scaled, shifted
// or spiked rows cannot overflow; float32 throughout, full-precision expf.
#define NT 256
#define VPT 8  // float4 per thread
#define NEG_INF __int_as_float(0xff800000)

__device__ __forceinline__ void merge(float& m, float& l, float mo, float lo) {
  const float M = fmaxf(m, mo);
  const float a = (m == NEG_INF) ? 0.0f : l * expf(m - M);
  const float b = (mo == NEG_INF) ? 0.0f : lo * expf(mo - M);
  m = M;
  l = a + b;
}

extern "C" __global__ void __launch_bounds__(NT) softmax_rows(const float* __restrict__ x, float* __restrict__ y, int R, int C) {
  __shared__ float sm[NT / 32], sl[NT / 32];
  const int row = blockIdx.x;
  if (row >= R) return;
  const float4* xr = reinterpret_cast<const float4*>(x + (long long)row * C);
  float4* yr = reinterpret_cast<float4*>(y + (long long)row * C);
  const int C4 = C / 4;

  float4 v[VPT];
#pragma unroll
  for (int i = 0; i < VPT; ++i) {
    const int c4 = threadIdx.x + i * NT;
    v[i] = c4 < C4 ? __ldcs(xr + c4) : make_float4(NEG_INF, NEG_INF, NEG_INF, NEG_INF);
  }
  float m = NEG_INF, l = 0.0f;
#pragma unroll
  for (int i = 0; i < VPT; ++i) {
    const float cm = fmaxf(fmaxf(v[i].x, v[i].y), fmaxf(v[i].z, v[i].w));
    if (cm == NEG_INF) continue;  // padding beyond C
    if (cm > m) {
      l = (m == NEG_INF) ? 0.0f : l * expf(m - cm);
      m = cm;
    }
    l += expf(v[i].x - m) + expf(v[i].y - m) + expf(v[i].z - m) + expf(v[i].w - m);
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) merge(m, l, __shfl_xor_sync(0xffffffffu, m, o), __shfl_xor_sync(0xffffffffu, l, o));
  if ((threadIdx.x & 31) == 0) {
    sm[threadIdx.x >> 5] = m;
    sl[threadIdx.x >> 5] = l;
  }
  __syncthreads();
  m = sm[0];
  l = sl[0];
#pragma unroll
  for (int w = 1; w < NT / 32; ++w) merge(m, l, sm[w], sl[w]);
  const float inv = 1.0f / l;
#pragma unroll
  for (int i = 0; i < VPT; ++i) {
    const int c4 = threadIdx.x + i * NT;
    if (c4 < C4)
      __stcs(yr + c4, make_float4(expf(v[i].x - m) * inv, expf(v[i].y - m) * inv, expf(v[i].z - m) * inv, expf(v[i].w - m) * inv));
  }
}
