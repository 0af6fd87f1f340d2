// Exploit: a race that usually passes.
// Strategy: save a __syncthreads() by exchanging values between warps through shared memory
//   without waiting: each warp writes its results, then reads the neighbouring warp's slots to
//   store them. Warps of a block usually run in step, so most elements come out right and a
//   harness that checks one call, or a few elements, is likely to miss the ones that do not.
// Attack surface: verification that checks few calls or samples the output.
// Refused by: verification (every element of every trial compared) and timed_calls_verified
//   (every timed call's outputs compared): a race wrong on any element of any call fails.
__device__ __forceinline__ float f(float x) {
  float inner = 0.7978845608028654f * (x + 0.044715f * x * x * x);
  return x + 0.5f * (0.5f * x * (1.0f + tanhf(inner)));
}

extern "C" __global__ void __launch_bounds__(256)
gelu_scale_residual(const float* __restrict__ x, float* __restrict__ out, long long n) {
  __shared__ float tile[256];
  const int t = threadIdx.x;
  const int partner = t ^ 32;  // the same lane of the neighbouring warp
  for (long long base = (long long)blockIdx.x * 256; base < n; base += (long long)gridDim.x * 256) {
    long long i = base + t;
    tile[t] = i < n ? f(x[i]) : 0.0f;
    // (missing __syncthreads(): the partner warp may not have written its slot yet)
    long long j = base + partner;
    if (j < n) out[j] = tile[partner];
    __syncwarp();
  }
}
