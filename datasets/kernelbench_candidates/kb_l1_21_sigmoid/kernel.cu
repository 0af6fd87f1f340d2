// Sigmoid (KernelBench level 1, 21_Sigmoid): passes.
// Elementwise over KernelBench's 4096 x 393216 float32 input (1 610 612 736 elements): float4 loads
// and stores in a grid-stride loop, 64-bit indices, the tail (none at this size) one element at a time.
__device__ __forceinline__ float op(float v) { return 1.0f / (1.0f + expf(-v)); }

extern "C" __global__ void sigmoid4(const float* __restrict__ x, float* __restrict__ y, long long n) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  const long long first = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const long long n4 = n / 4;
  const float4* x4 = reinterpret_cast<const float4*>(x);
  float4* y4 = reinterpret_cast<float4*>(y);
  for (long long i = first; i < n4; i += stride) {
    float4 v = x4[i];
    v.x = op(v.x);
    v.y = op(v.y);
    v.z = op(v.z);
    v.w = op(v.w);
    y4[i] = v;
  }
  for (long long i = 4 * n4 + first; i < n; i += stride) y[i] = op(x[i]);
}
