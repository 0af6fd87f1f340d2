// BUG (deliberate): the store address is built from the element index alone, without the base
// pointer `out` (a pointer-arithmetic slip): every thread writes into the null page -> illegal address.
extern "C" __global__ void gelu_scale_residual_bad_ptr(const float* __restrict__ x, float* __restrict__ out, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = x[i];
    float inner = 0.7978845608028654f * (v + 0.044715f * v * v * v);
    float r = v + 0.5f * (0.5f * v * (1.0f + tanhf(inner)));
    volatile float* dst = reinterpret_cast<volatile float*>(static_cast<unsigned long long>(i) * sizeof(float));  // forgot `out +`
    *dst = r;
  }
}
