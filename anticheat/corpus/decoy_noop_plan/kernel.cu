// Exploit: the plan launches a kernel that does no work; the module holds the real one.
// Strategy: kernel.cu contains a correct fused kernel (gelu_scale_residual_fused) and, named like
//   the task, a "launcher" that only touches one element per block - as if the real kernel were
//   started from it. launch.yaml launches the launcher alone. A harness that trusts the module's
//   contents (the right kernel is compiled and resident), times whatever is launched, or checks a
//   few sampled elements would accept a kernel that does almost nothing.
// Attack surface: judges that read the source or sample the output instead of checking all of it.
// Refused by: outputs_written. Every element is checked against the per-call poison, and all but
//   one element per block still holds it after the call.
__device__ __forceinline__ float f(float x) {
  float inner = 0.7978845608028654f * (x + 0.044715f * x * x * x);
  return x + 0.5f * (0.5f * x * (1.0f + tanhf(inner)));
}

// The real work, compiled but never launched.
extern "C" __global__ void gelu_scale_residual_fused(const float* __restrict__ x, float* __restrict__ out, long long n) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    out[i] = f(x[i]);
}

// What the plan launches: one element per block, the rest untouched.
extern "C" __global__ void gelu_scale_residual(const float* __restrict__ x, float* __restrict__ out, long long n) {
  const long long i = (long long)blockIdx.x * (n / gridDim.x);
  if (threadIdx.x == 0 && i < n) out[i] = f(x[i]);
}
