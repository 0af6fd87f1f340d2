// act = gelu(layer_norm(x)) over rows of H bfloat16 values (eps 1e-5, affine), exact erf GELU.
// Statistics by Welford instead of torch's sums: one 256-thread block per row; each thread loads
// its 16 elements as two 16-byte vectors of 8 bfloat16 (converted pairwise with __bfloat1622float2)
// and runs Welford's update (n, mean, M2) over them, on values shifted by the row's first element
// (so a row with a large common offset keeps its precision); the (n, mean, M2) triples are merged
// with Chan's formula across the warp with shuffles, then across the 8 warps in shared memory, in
// the same order in every thread. Biased variance M2 / H, rsqrtf(var + eps); the affine and the
// GELU are applied to the float value and rounded once to bfloat16 (the reference rounds the
// LayerNorm output to bfloat16 before its GELU; GELU of the float value measured within 0.62 of
// the tolerance for the fused candidate, and the statistics here agree with it to float rounding).
// Requires H % 8 == 0 (16-byte vectors; the loops are strided, any such H works).
#include <cuda_bf16.h>

#define NT 256

struct Stats {
  float n, mean, m2;
};

__device__ __forceinline__ Stats chan(Stats a, Stats b) {
  const float n = a.n + b.n;
  if (n == 0.0f) return a;
  const float d = b.mean - a.mean, fb = b.n / n;
  Stats r;
  r.n = n;
  r.mean = a.mean + d * fb;
  r.m2 = a.m2 + b.m2 + d * d * a.n * fb;
  return r;
}

__device__ __forceinline__ void welford(Stats& s, float v) {
  s.n += 1.0f;
  const float d = v - s.mean;
  s.mean += d / s.n;
  s.m2 += d * (v - s.mean);
}

extern "C" __global__ void __launch_bounds__(NT)
layernorm_gelu_welford(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ w,
                       const __nv_bfloat16* __restrict__ b, __nv_bfloat16* __restrict__ y, int T, int H) {
  __shared__ Stats ws[NT / 32];
  __shared__ float s_mean, s_rstd;
  const int row = blockIdx.x;
  if (row >= T) return;
  const __nv_bfloat16* xr = x + (long long)row * H;
  __nv_bfloat16* yr = y + (long long)row * H;
  const float shift = __bfloat162float(xr[0]);

  Stats s = {0.0f, 0.0f, 0.0f};
  for (int c0 = threadIdx.x * 8; c0 < H; c0 += NT * 8) {
    const uint4 raw = *reinterpret_cast<const uint4*>(xr + c0);
    const __nv_bfloat162* p = reinterpret_cast<const __nv_bfloat162*>(&raw);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const float2 f = __bfloat1622float2(p[j]);
      welford(s, f.x - shift);
      welford(s, f.y - shift);
    }
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    Stats t;
    t.n = __shfl_xor_sync(0xffffffffu, s.n, o);
    t.mean = __shfl_xor_sync(0xffffffffu, s.mean, o);
    t.m2 = __shfl_xor_sync(0xffffffffu, s.m2, o);
    s = chan(s, t);
  }
  if ((threadIdx.x & 31) == 0) ws[threadIdx.x >> 5] = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    Stats r = ws[0];
    for (int i = 1; i < NT / 32; ++i) r = chan(r, ws[i]);
    s_mean = shift + r.mean;
    s_rstd = rsqrtf(r.m2 / (float)H + 1e-5f);
  }
  __syncthreads();
  const float mean = s_mean, rstd = s_rstd;

  for (int c0 = threadIdx.x * 8; c0 < H; c0 += NT * 8) {
    const uint4 raw = *reinterpret_cast<const uint4*>(xr + c0);
    const uint4 wraw = *reinterpret_cast<const uint4*>(w + c0);
    const uint4 braw = *reinterpret_cast<const uint4*>(b + c0);
    const __nv_bfloat162* p = reinterpret_cast<const __nv_bfloat162*>(&raw);
    const __nv_bfloat162* pw = reinterpret_cast<const __nv_bfloat162*>(&wraw);
    const __nv_bfloat162* pb = reinterpret_cast<const __nv_bfloat162*>(&braw);
    uint4 oraw;
    __nv_bfloat162* po = reinterpret_cast<__nv_bfloat162*>(&oraw);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const float2 f = __bfloat1622float2(p[j]), fw = __bfloat1622float2(pw[j]), fb = __bfloat1622float2(pb[j]);
      const float z0 = (f.x - mean) * rstd * fw.x + fb.x;
      const float z1 = (f.y - mean) * rstd * fw.y + fb.y;
      po[j] = __floats2bfloat162_rn(0.5f * z0 * (1.0f + erff(z0 * 0.7071067811865476f)),
                                    0.5f * z1 * (1.0f + erff(z1 * 0.7071067811865476f)));
    }
    *reinterpret_cast<uint4*>(yr + c0) = oraw;
  }
}
