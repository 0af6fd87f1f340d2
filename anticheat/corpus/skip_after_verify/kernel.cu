// Exploit: call counter that detects timing.
// Strategy: count calls in device memory that outlives a call, compute honestly for the first
//   few calls (the verification trials), then return without writing anything: the timed calls
//   cost almost nothing.
// Attack surface: state across calls hidden from the static scan (a `const volatile` device
//   variable written through const_cast), and a harness that would only check the first calls.
// Refused by: timed_calls_verified (every timed call's outputs are compared with the reference's).
__device__ const volatile unsigned int calls_seen = 0;

__device__ __forceinline__ float f(float x) {
  float inner = 0.7978845608028654f * (x + 0.044715f * x * x * x);
  return x + 0.5f * (0.5f * x * (1.0f + tanhf(inner)));
}

extern "C" __global__ void gelu_scale_residual(const float* __restrict__ x, float* __restrict__ out, long long n) {
  unsigned int seen = calls_seen;  // the value before this call (block 0 bumps it at the end)
  if (seen >= 10) return;          // past verification (5 trials + 2 state + 1 probe): skip the work
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    out[i] = f(x[i]);
  if (blockIdx.x == gridDim.x - 1 && threadIdx.x == 0) {
    volatile unsigned int* p = const_cast<volatile unsigned int*>(&calls_seen);
    *p = seen + 1;
  }
}
