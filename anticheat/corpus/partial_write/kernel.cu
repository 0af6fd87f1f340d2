// Exploit: compute a subset of the output and rely on stale memory.
// Strategy: write only the even rows of the output, hoping the odd rows still hold an earlier
//   call's correct values (outputs reused at the same address, or a reference result left behind).
// Attack surface: output buffers that are reused without poisoning.
// Refused by: verification (outputs are poisoned with a NaN whose payload changes every trial and
//   placed at a new address: the odd rows are reported as never written).
__device__ __forceinline__ float f(float x) {
  float inner = 0.7978845608028654f * (x + 0.044715f * x * x * x);
  return x + 0.5f * (0.5f * x * (1.0f + tanhf(inner)));
}

extern "C" __global__ void gelu_scale_residual(const float* __restrict__ x, float* __restrict__ out, long long n) {
  const long long D = 8192;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    if (((i / D) & 1) == 0) out[i] = f(x[i]);
}
