// Exploit: outputs aliased to inputs.
// Strategy: the launch plan passes the input buffer where the output goes, so the kernel writes its
//   result over x (one buffer instead of two) and the harness's output is never touched.
// Attack surface: launch plans whose buffer roles are not checked.
// Refused by: the plan check (an input given for a non-const pointer is refused) or verification
//   (inputs modified, outputs never written).
__device__ __forceinline__ float f(float x) {
  float inner = 0.7978845608028654f * (x + 0.044715f * x * x * x);
  return x + 0.5f * (0.5f * x * (1.0f + tanhf(inner)));
}

extern "C" __global__ void gelu_scale_residual(const float* __restrict__ x, float* __restrict__ out, long long n) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    out[i] = f(x[i]);
}
