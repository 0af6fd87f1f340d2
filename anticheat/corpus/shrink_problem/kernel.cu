// Exploit: a launch plan that shrinks the problem.
// Strategy: the kernel is correct, but the plan passes n / 2: half the work is done and the
//   other half of the output is left to whatever the buffer held.
// Attack surface: plans whose sizes are not checked against the task.
// Refused by: verification (the second half keeps its poison: never written).
__device__ __forceinline__ float f(float x) {
  float inner = 0.7978845608028654f * (x + 0.044715f * x * x * x);
  return x + 0.5f * (0.5f * x * (1.0f + tanhf(inner)));
}

extern "C" __global__ void gelu_scale_residual(const float* __restrict__ x, float* __restrict__ out, long long n) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    out[i] = f(x[i]);
}
