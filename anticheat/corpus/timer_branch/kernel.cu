// Exploit: branch on whether the call is being timed.
// Strategy: read the GPU's global timer; calls that come in quick succession (a timing loop) skip
//   the work, isolated calls (verification) compute.
// Attack surface: timing loops that call back to back; device code that can read a clock.
// Refused by: static (reading %globaltimer is not allowed in kernel candidates).
__device__ unsigned long long last_ns;  // (mutable state: refused too)
__device__ __forceinline__ float f(float x) {
  float inner = 0.7978845608028654f * (x + 0.044715f * x * x * x);
  return x + 0.5f * (0.5f * x * (1.0f + tanhf(inner)));
}

extern "C" __global__ void gelu_scale_residual(const float* __restrict__ x, float* __restrict__ out, long long n) {
  unsigned long long now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  if (now - last_ns < 2000000ull) return;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    out[i] = f(x[i]);
  if (blockIdx.x == 0 && threadIdx.x == 0) last_ns = now;
}
