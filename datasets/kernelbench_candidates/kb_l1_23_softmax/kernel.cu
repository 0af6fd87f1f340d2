// Softmax over dim 1 (KernelBench level 1, 23_Softmax): passes. One block of 1024 threads per row of
// 393 216 float32 values, three passes over the row (its max, the sum of exp(x - max), the outputs),
// float4 loads, block reductions through shared memory.
constexpr int kThreads = 1024;

__device__ float block_reduce(float v, float* shared, bool is_max) {
  for (int off = 16; off > 0; off /= 2) {
    const float o = __shfl_xor_sync(0xffffffffu, v, off);
    v = is_max ? fmaxf(v, o) : v + o;
  }
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < kThreads / 32 ? shared[lane] : (is_max ? -__int_as_float(0x7f800000) : 0.0f);
    for (int off = 16; off > 0; off /= 2) {
      const float o = __shfl_xor_sync(0xffffffffu, v, off);
      v = is_max ? fmaxf(v, o) : v + o;
    }
    if (lane == 0) shared[0] = v;
  }
  __syncthreads();
  v = shared[0];
  __syncthreads();  // shared[] is reused by the next reduction
  return v;
}

extern "C" __global__ void __launch_bounds__(kThreads) softmax_rows(const float* __restrict__ x, float* __restrict__ y, int cols) {
  __shared__ float shared[kThreads / 32];
  const long long row = blockIdx.x;
  const float4* x4 = reinterpret_cast<const float4*>(x + row * cols);
  float4* y4 = reinterpret_cast<float4*>(y + row * cols);
  const int n4 = cols / 4;  // 393 216 is a multiple of 4
  float m = -__int_as_float(0x7f800000);
  for (int i = threadIdx.x; i < n4; i += kThreads) {
    const float4 v = x4[i];
    m = fmaxf(m, fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)));
  }
  m = block_reduce(m, shared, true);
  float s = 0.0f;
  for (int i = threadIdx.x; i < n4; i += kThreads) {
    const float4 v = x4[i];
    s += expf(v.x - m) + expf(v.y - m) + expf(v.z - m) + expf(v.w - m);
  }
  s = block_reduce(s, shared, false);
  const float inv = 1.0f / s;
  for (int i = threadIdx.x; i < n4; i += kThreads) {
    float4 v = x4[i];
    v.x = expf(v.x - m) * inv;
    v.y = expf(v.y - m) * inv;
    v.z = expf(v.z - m) * inv;
    v.w = expf(v.w - m) * inv;
    y4[i] = v;
  }
}
