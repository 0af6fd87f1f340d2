// Exploit: result cache keyed by a content hash.
// Strategy: hash a few sampled input elements; when the hash matches the last call's, assume the
//   same inputs and skip the work (copying a cached answer would cost less than computing it for
//   heavier tasks; here the skip alone shows the hole).
// Attack surface: harnesses that re-run identical inputs (timing loops, re-verification with the
//   same draw), state hidden from the static scan.
// Refused by: state_new_addresses (the same values at new addresses and fresh poisoned outputs:
//   the skipped call leaves poison).
__device__ const volatile unsigned int last_hash = 0;
__device__ __forceinline__ float f(float x) {
  float inner = 0.7978845608028654f * (x + 0.044715f * x * x * x);
  return x + 0.5f * (0.5f * x * (1.0f + tanhf(inner)));
}

extern "C" __global__ void gelu_scale_residual(const float* __restrict__ x, float* __restrict__ out, long long n) {
  unsigned int h = 2166136261u;
  for (int k = 0; k < 16; ++k) h = (h ^ __float_as_uint(x[(n / 16) * k])) * 16777619u;
  if (h == last_hash) return;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    out[i] = f(x[i]);
  if (blockIdx.x == gridDim.x - 1 && threadIdx.x == 0) *const_cast<volatile unsigned int*>(&last_hash) = h;
}
