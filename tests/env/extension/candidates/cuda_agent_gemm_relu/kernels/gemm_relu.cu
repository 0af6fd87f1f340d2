// y[m, n] = max(0, sum_k x[m, k] * w[n, k] + b[n]): 16x16 tiles through shared memory.
#include <cuda_runtime.h>

namespace {
constexpr int kTile = 16;

__global__ void gemm_relu_kernel(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
                                 float* __restrict__ y, int m, int n, int k) {
  __shared__ float xs[kTile][kTile];
  __shared__ float ws[kTile][kTile + 1];
  const int row = blockIdx.y * kTile + threadIdx.y;
  const int col = blockIdx.x * kTile + threadIdx.x;
  float acc = 0.f;
  for (int k0 = 0; k0 < k; k0 += kTile) {
    const int kx = k0 + threadIdx.x;
    const int wrow = blockIdx.x * kTile + threadIdx.y;
    xs[threadIdx.y][threadIdx.x] = (row < m && kx < k) ? x[(long long)row * k + kx] : 0.f;
    ws[threadIdx.y][threadIdx.x] = (wrow < n && kx < k) ? w[(long long)wrow * k + kx] : 0.f;
    __syncthreads();
#pragma unroll
    for (int i = 0; i < kTile; ++i) acc += xs[threadIdx.y][i] * ws[threadIdx.x][i];
    __syncthreads();
  }
  if (row < m && col < n) y[(long long)row * n + col] = fmaxf(acc + b[col], 0.f);
}
}  // namespace

extern "C" void gemm_relu_launch(const float* x, const float* w, const float* b, float* y, int m, int n, int k,
                                 cudaStream_t stream) {
  const dim3 block(kTile, kTile);
  const dim3 grid((n + kTile - 1) / kTile, (m + kTile - 1) / kTile);
  gemm_relu_kernel<<<grid, block, 0, stream>>>(x, w, b, y, m, n, k);
}
