// y = gelu(x + bias) in bfloat16 with 16-byte vector loads (8 values per thread), exact erf GELU
// computed in float.
#include <cuda_bf16.h>
#include <cuda/std/cstdint>

struct alignas(16) Bf16x8 {
  __nv_bfloat162 v[4];
};

__device__ __forceinline__ float gelu(float x) { return 0.5f * x * (1.f + erff(x * 0.70710678118654752f)); }

extern "C" __global__ void bias_gelu(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ bias,
                                     __nv_bfloat16* __restrict__ y, cuda::std::int64_t rows, int cols) {
  const cuda::std::int64_t vec_per_row = cols / 8;
  const cuda::std::int64_t total = rows * vec_per_row;
  for (cuda::std::int64_t i = blockIdx.x * static_cast<cuda::std::int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<cuda::std::int64_t>(gridDim.x) * blockDim.x) {
    const int c = static_cast<int>(i % vec_per_row) * 8;
    Bf16x8 xv = reinterpret_cast<const Bf16x8*>(x)[i];
    Bf16x8 bv = *reinterpret_cast<const Bf16x8*>(bias + c);
    Bf16x8 out;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      float2 a = __bfloat1622float2(xv.v[k]);
      float2 b = __bfloat1622float2(bv.v[k]);
      out.v[k] = __floats2bfloat162_rn(gelu(a.x + b.x), gelu(a.y + b.y));
    }
    reinterpret_cast<Bf16x8*>(y)[i] = out;
  }
}
