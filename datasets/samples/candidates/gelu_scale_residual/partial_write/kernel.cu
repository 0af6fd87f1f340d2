// BUG (deliberate): the launch sizes the grid for 8 elements per thread, but each thread only
// handles one float4 (4 elements), so the second half of `out` is never written (stays NaN).
__device__ __forceinline__ float gsr_pw(float v) {
  float inner = 0.7978845608028654f * (v + 0.044715f * v * v * v);
  return v + 0.5f * (0.5f * v * (1.0f + tanhf(inner)));
}

extern "C" __global__ void gelu_scale_residual_pw(const float* __restrict__ x, float* __restrict__ out, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;  // index of a float4
  if (i < n / 4) {
    float4 v = reinterpret_cast<const float4*>(x)[i];
    float4 r = make_float4(gsr_pw(v.x), gsr_pw(v.y), gsr_pw(v.z), gsr_pw(v.w));
    reinterpret_cast<float4*>(out)[i] = r;
  }
}
