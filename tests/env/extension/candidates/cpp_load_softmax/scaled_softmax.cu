// One block per row: y = softmax(x * w) over the last dimension (two passes, max then sum).
#include <cuda_runtime.h>
#include <math.h>

__global__ void scaled_softmax_kernel(const float* x, const float* w, float* y, int cols) {
  extern __shared__ float red[];
  const float* in = x + (long long)blockIdx.x * cols;
  float* out = y + (long long)blockIdx.x * cols;
  float m = -INFINITY;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, in[c] * w[c]);
  red[threadIdx.x] = m;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
    __syncthreads();
  }
  m = red[0];
  __syncthreads();
  float sum = 0.f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) sum += expf(in[c] * w[c] - m);
  red[threadIdx.x] = sum;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
    __syncthreads();
  }
  const float inv = 1.f / red[0];
  for (int c = threadIdx.x; c < cols; c += blockDim.x) out[c] = expf(in[c] * w[c] - m) * inv;
}

void scaled_softmax_launch(const float* x, const float* w, float* y, int rows, int cols, cudaStream_t stream) {
  scaled_softmax_kernel<<<rows, 256, 256 * sizeof(float), stream>>>(x, w, y, cols);
}
