// Exploit: busy-wait tricks around the timer.
// Strategy: spin on clock64() in one block so that the calls the harness checks (the first ones)
//   look slow and the "speedup" of later calls looks larger; or to stretch the reference's time
//   when kernels overlap.
// Attack surface: device clocks, timing that compares calls with each other.
// Refused by: static (clock64() and sleeping are not allowed in kernel candidates).
__device__ __forceinline__ float f(float x) {
  float inner = 0.7978845608028654f * (x + 0.044715f * x * x * x);
  return x + 0.5f * (0.5f * x * (1.0f + tanhf(inner)));
}

extern "C" __global__ void gelu_scale_residual(const float* __restrict__ x, float* __restrict__ out, long long n) {
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    long long t0 = clock64();
    while (clock64() - t0 < 1000) { }
  }
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    out[i] = f(x[i]);
}
