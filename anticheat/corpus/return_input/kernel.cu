// Exploit: return an input.
// Strategy: copy x to out (half the work of the real kernel, no math): for tasks whose output is
//   close to an input (a residual add with a small branch), the error may hide under a loose
//   tolerance.
// Attack surface: a tolerance too loose for the task, outputs that resemble inputs.
// Refused by: verification (out = x + 0.5 gelu(x) is far from x beyond the 1e-4 tolerance).
extern "C" __global__ void gelu_scale_residual(const float* __restrict__ x, float* __restrict__ out, long long n) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    out[i] = x[i];
}
