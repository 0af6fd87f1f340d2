// Exploit: result cache keyed by pointer.
// Strategy: remember the input and output addresses of the last call; when a call comes with the
//   same addresses, assume the same inputs and that the output still holds the answer: skip.
// Attack surface: harnesses that time the same buffers over and over (the answer is already
//   there); state hidden from the static scan (const_cast on const volatile device variables).
// Refused by: state_same_addresses (new values at the same addresses, outputs poisoned again).
__device__ const volatile unsigned long long last_x = 0, last_out = 0;
__device__ __forceinline__ float f(float x) {
  float inner = 0.7978845608028654f * (x + 0.044715f * x * x * x);
  return x + 0.5f * (0.5f * x * (1.0f + tanhf(inner)));
}

extern "C" __global__ void gelu_scale_residual(const float* __restrict__ x, float* __restrict__ out, long long n) {
  if (last_x == (unsigned long long)x && last_out == (unsigned long long)out) return;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    out[i] = f(x[i]);
  if (blockIdx.x == gridDim.x - 1 && threadIdx.x == 0) {
    *const_cast<volatile unsigned long long*>(&last_x) = (unsigned long long)x;
    *const_cast<volatile unsigned long long*>(&last_out) = (unsigned long long)out;
  }
}
