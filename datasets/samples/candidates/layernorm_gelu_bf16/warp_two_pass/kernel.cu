// act = gelu(layer_norm(x)) over rows of H bfloat16 values (eps 1e-5, affine), exact erf GELU.
// One warp per row, 8 rows per 256-thread block: no shared memory, no block barrier. Each lane holds
// H / 32 values of its row in registers as packed bf16 (lane l loads the 16-byte chunks l, l + 32,
// ...: coalesced; 16 chunks for H = 4096). Two passes over the registers, one read of memory: the
// mean by a __shfl_xor butterfly (every lane gets the same bits), then the biased variance from
// (x - mean)^2 (no E[x^2] - mean^2 cancellation), rstd = rsqrt(var + eps). Output: the affine on
// the float value, then GELU 0.5 z (1 + erf(z / sqrt 2)) on it - not on a bf16-rounded LayerNorm
// output as torch does (that double rounding makes rare 2-ulp misses; see the README) - rounded
// once to bf16. Requires H % 256 == 0 and H <= 4096.
#include <cuda_bf16.h>

#define WARPS 8
#define MAX_CHUNKS 16  // 16-byte chunks (8 bf16) per lane: H <= 32 * 8 * 16 = 4096

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float gelu(float z) { return 0.5f * z * (1.0f + erff(z * 0.7071067811865476f)); }

extern "C" __global__ void __launch_bounds__(32 * WARPS)
layernorm_gelu_warp(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ w, const __nv_bfloat16* __restrict__ b,
                    __nv_bfloat16* __restrict__ act, int T, int H) {
  const int lane = threadIdx.x & 31;
  const int row = blockIdx.x * WARPS + (threadIdx.x >> 5);
  if (row >= T) return;  // a whole warp leaves together
  const int chunks = H / 256;  // per lane
  const uint4* xr = reinterpret_cast<const uint4*>(x + (long long)row * H);
  uint4* yr = reinterpret_cast<uint4*>(act + (long long)row * H);
  const uint4* w8 = reinterpret_cast<const uint4*>(w);
  const uint4* b8 = reinterpret_cast<const uint4*>(b);

  uint4 v[MAX_CHUNKS];
  float s = 0.0f;
#pragma unroll
  for (int k = 0; k < MAX_CHUNKS; ++k) {
    if (k < chunks) {
      v[k] = xr[lane + 32 * k];
      const __nv_bfloat162* p = reinterpret_cast<const __nv_bfloat162*>(&v[k]);
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const float2 f = __bfloat1622float2(p[j]);
        s += f.x + f.y;
      }
    }
  }
  const float mean = warp_sum(s) / (float)H;
  float q = 0.0f;
#pragma unroll
  for (int k = 0; k < MAX_CHUNKS; ++k) {
    if (k < chunks) {
      const __nv_bfloat162* p = reinterpret_cast<const __nv_bfloat162*>(&v[k]);
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const float2 f = __bfloat1622float2(p[j]);
        const float a = f.x - mean, c = f.y - mean;
        q += a * a + c * c;
      }
    }
  }
  const float rstd = rsqrtf(warp_sum(q) / (float)H + 1e-5f);
#pragma unroll
  for (int k = 0; k < MAX_CHUNKS; ++k) {
    if (k < chunks) {
      const int c8 = lane + 32 * k;
      const uint4 wr = w8[c8], br = b8[c8];
      const __nv_bfloat162* p = reinterpret_cast<const __nv_bfloat162*>(&v[k]);
      const __nv_bfloat162* pw = reinterpret_cast<const __nv_bfloat162*>(&wr);
      const __nv_bfloat162* pb = reinterpret_cast<const __nv_bfloat162*>(&br);
      uint4 o;
      __nv_bfloat162* po = reinterpret_cast<__nv_bfloat162*>(&o);
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const float2 f = __bfloat1622float2(p[j]), fw = __bfloat1622float2(pw[j]), fb = __bfloat1622float2(pb[j]);
        po[j] = __floats2bfloat162_rn(gelu((f.x - mean) * rstd * fw.x + fb.x), gelu((f.y - mean) * rstd * fw.y + fb.y));
      }
      yr[c8] = o;
    }
  }
}
