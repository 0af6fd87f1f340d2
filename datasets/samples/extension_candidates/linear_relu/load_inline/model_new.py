import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
// act = relu(x @ W^T + b): x [M, K], W [N, K] (nn.Linear layout), b [N], act [M, N]; float32 with
// float32 FFMA accumulation (no TF32).
// Classic shared-memory SGEMM: 128x128 block tile, BK = 8, 256 threads, 8x8 outputs per thread
// (rows trow*4+{0..3} and 64+trow*4+{0..3}, cols likewise), register prefetch of the next k-tile.
// Tiles are stored k-major in shared memory (As[k][m], Bs[k][n]). Every load and store is bounds
// checked (zero fill), so any M, N, K works; 16-byte loads/stores where alignment allows.
#define BM 128
#define BN 128
#define BK 8
#define NT 256

// Loads this thread's 4 elements of a 128 x 8 tile of a row-major [rows, K] matrix:
// row r = t / 2, columns c4 .. c4 + 3 with c4 = (t % 2) * 4.
__device__ __forceinline__ float4 load_tile4(const float* __restrict__ A, int rows, int K, int row0, int k0, int t) {
  const int r = row0 + t / 2;
  const int c = k0 + (t % 2) * 4;
  float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  if (r < rows) {
    const float* p = A + (long long)r * K + c;
    if ((K % 4) == 0 && c + 4 <= K) {
      v = *reinterpret_cast<const float4*>(p);
    } else {
      if (c + 0 < K) v.x = p[0];
      if (c + 1 < K) v.y = p[1];
      if (c + 2 < K) v.z = p[2];
      if (c + 3 < K) v.w = p[3];
    }
  }
  return v;
}

__device__ __forceinline__ void store_tile4(float (*S)[BM], float4 v, int t) {
  const int r = t / 2, c = (t % 2) * 4;
  S[c + 0][r] = v.x;
  S[c + 1][r] = v.y;
  S[c + 2][r] = v.z;
  S[c + 3][r] = v.w;
}

__global__ void __launch_bounds__(NT, 2)
linear_relu(const float* __restrict__ x, const float* __restrict__ W, const float* __restrict__ bias,
            float* __restrict__ out, int M, int N, int K) {
  __shared__ __align__(16) float As[BK][BM];
  __shared__ __align__(16) float Bs[BK][BN];
  const int t = threadIdx.x;
  const int trow = t / 16, tcol = t % 16;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;

  float acc[8][8];
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;

  float4 ra = load_tile4(x, M, K, m0, 0, t);
  float4 rb = load_tile4(W, N, K, n0, 0, t);
  store_tile4(As, ra, t);
  store_tile4(Bs, rb, t);
  __syncthreads();

  for (int k0 = 0; k0 < K; k0 += BK) {
    const bool has_next = k0 + BK < K;
    if (has_next) {  // prefetch the next k-tile into registers while computing this one
      ra = load_tile4(x, M, K, m0, k0 + BK, t);
      rb = load_tile4(W, N, K, n0, k0 + BK, t);
    }
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      float a[8], b[8];
      float4 a0 = *reinterpret_cast<const float4*>(&As[kk][trow * 4]);
      float4 a1 = *reinterpret_cast<const float4*>(&As[kk][64 + trow * 4]);
      float4 b0 = *reinterpret_cast<const float4*>(&Bs[kk][tcol * 4]);
      float4 b1 = *reinterpret_cast<const float4*>(&Bs[kk][64 + tcol * 4]);
      a[0] = a0.x; a[1] = a0.y; a[2] = a0.z; a[3] = a0.w; a[4] = a1.x; a[5] = a1.y; a[6] = a1.z; a[7] = a1.w;
      b[0] = b0.x; b[1] = b0.y; b[2] = b0.z; b[3] = b0.w; b[4] = b1.x; b[5] = b1.y; b[6] = b1.z; b[7] = b1.w;
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    __syncthreads();  // everyone is done reading this tile
    if (has_next) {
      store_tile4(As, ra, t);
      store_tile4(Bs, rb, t);
      __syncthreads();
    }
  }

  // epilogue: + bias, ReLU, store
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int m = m0 + (i < 4 ? trow * 4 + i : 64 + trow * 4 + (i - 4));
    if (m >= M) continue;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int n = n0 + h * 64 + tcol * 4;
      float v[4];
#pragma unroll
      for (int q = 0; q < 4; ++q) v[q] = (n + q < N) ? fmaxf(acc[i][h * 4 + q] + bias[n + q], 0.0f) : 0.0f;
      float* p = out + (long long)m * N + n;
      if ((N % 4) == 0 && n + 4 <= N) {
        *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
      } else {
#pragma unroll
        for (int q = 0; q < 4; ++q)
          if (n + q < N) p[q] = v[q];
      }
    }
  }
}


torch::Tensor linear_relu_cuda(torch::Tensor x, torch::Tensor weight, torch::Tensor bias) {
  x = x.contiguous();
  weight = weight.contiguous();
  const int M = x.size(0), K = x.size(1), N = weight.size(0);
  auto out = torch::empty({M, N}, x.options());
  if (out.numel() == 0) return out;  // an empty batch: no block to launch
  dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
  linear_relu<<<grid, NT, 0, c10::cuda::getCurrentCUDAStream().stream()>>>(
      x.data_ptr<float>(), weight.data_ptr<float>(), bias.data_ptr<float>(), out.data_ptr<float>(), M, N, K);
  return out;
}
"""

cpp_source = "torch::Tensor linear_relu_cuda(torch::Tensor x, torch::Tensor weight, torch::Tensor bias);"

linear_relu = load_inline(
    name="linear_relu",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["linear_relu_cuda"],
    verbose=False,
    extra_cflags=[""],
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self, in_features=4096, out_features=4096):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.linear_relu = linear_relu

    def forward(self, x):
        return self.linear_relu.linear_relu_cuda(x, self.fc.weight, self.fc.bias)
