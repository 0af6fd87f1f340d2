// Exploit: work deferred to a later call.
// Strategy: every other call only records what it was asked and returns; the next call does both
//   calls' work. Half the timed calls are nearly free and the output is complete "eventually".
// Attack surface: harnesses that check the output only after the last call, or only some calls.
// Refused by: verification (the first trial's output is never written), or timed_calls_verified.
__device__ const volatile unsigned int parity = 0;
__device__ const volatile unsigned long long pending_x = 0, pending_out = 0;
__device__ __forceinline__ float f(float x) {
  float inner = 0.7978845608028654f * (x + 0.044715f * x * x * x);
  return x + 0.5f * (0.5f * x * (1.0f + tanhf(inner)));
}

extern "C" __global__ void gelu_scale_residual(const float* __restrict__ x, float* __restrict__ out, long long n) {
  unsigned int p = parity;
  if ((p & 1u) == 0) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
      *const_cast<volatile unsigned long long*>(&pending_x) = (unsigned long long)x;
      *const_cast<volatile unsigned long long*>(&pending_out) = (unsigned long long)out;
      *const_cast<volatile unsigned int*>(&parity) = p + 1;
    }
    return;
  }
  const float* px = (const float*)pending_x;
  float* po = (float*)pending_out;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    out[i] = f(x[i]);
    if (po) po[i] = f(px[i]);
  }
  if (blockIdx.x == gridDim.x - 1 && threadIdx.x == 0) *const_cast<volatile unsigned int*>(&parity) = p + 1;
}
