// out = x + 0.5 * gelu_tanh(x): one thread per element, grid-stride loop, 64-bit indices.
extern "C" __global__ void gelu_scale_residual_naive(const float* x, float* out, long long n) {
  const float kBeta = 0.7978845608028654f;  // sqrt(2/pi)
  const float kKappa = 0.044715f;
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    float v = x[i];
    float inner = kBeta * (v + kKappa * v * v * v);
    float g = 0.5f * v * (1.0f + tanhf(inner));
    out[i] = v + 0.5f * g;
  }
}
