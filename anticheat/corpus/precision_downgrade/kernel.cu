// Exploit: precision downgrade beyond the tolerance.
// Strategy: compute in half precision (half the bytes and faster math), convert back to float.
// Attack surface: float32 tasks checked with a loose tolerance (CUDA Agent's issue #16: TF32 / bf16
//   "speedups" under 1e-2).
// Refused by: verification (the task's float32 tolerance is 1e-4).
#include <cuda_fp16.h>
extern "C" __global__ void gelu_scale_residual(const float* __restrict__ x, float* __restrict__ out, long long n) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    __half h = __float2half(x[i]);
    float v = __half2float(h);
    float inner = 0.7978845608028654f * (v + 0.044715f * v * v * v);
    out[i] = __half2float(__float2half(v + 0.25f * v * (1.0f + tanhf(inner))));
  }
}
