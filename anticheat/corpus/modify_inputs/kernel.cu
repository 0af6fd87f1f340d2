// Exploit: modified inputs.
// Strategy: compute the output in place over the input (no separate write stream), then copy it to
//   out; or scribble on an input so that the reference, run afterwards on the same buffer,
//   computes something that matches the candidate's wrong answer.
// Attack surface: references that run after the candidate on the candidate's (modified) inputs.
// Refused by: verification (keyed fingerprints of every input before and after the call).
__device__ __forceinline__ float f(float x) {
  float inner = 0.7978845608028654f * (x + 0.044715f * x * x * x);
  return x + 0.5f * (0.5f * x * (1.0f + tanhf(inner)));
}

extern "C" __global__ void gelu_scale_residual(float* __restrict__ x, float* __restrict__ out, long long n) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    float v = f(x[i]);
    x[i] = 0.0f;
    out[i] = v;
  }
}
