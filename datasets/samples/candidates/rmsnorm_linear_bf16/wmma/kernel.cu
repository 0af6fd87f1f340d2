// up = rms_norm(x, eps=1e-6) @ W^T, bfloat16 in/out, float32 accumulation. Two kernels:
//  1) rmsnorm_bf16: one 512-thread block per row (8 bf16 per thread in registers), sum of squares
//     with cub::BlockReduce, xn = bf16(x * rsqrt(mean(x^2) + eps) * weight) into a workspace
//     (one rounding, as PyTorch's fused CUDA RMSNorm produces its bfloat16 output).
//  2) gemm_bf16_nt: C[M, N] = A[M, K] * B[N, K]^T with WMMA 16x16x16 bf16 tensor-core tiles and
//     float32 accumulators; 128x128 block tile, BK = 32, 8 warps of 64x32, register prefetch of the
//     next k-tile, results rounded once to bf16. Rows beyond M / N are zero-filled and not stored.
//     Requires K % 8 == 0 (16-byte loads); the task has K = H = 4096.
#include <cuda_bf16.h>
#include <mma.h>
#include <cub/block/block_reduce.cuh>
using namespace nvcuda;

#define RN_THREADS 512
#define RN_VEC 8

extern "C" __global__ void __launch_bounds__(RN_THREADS)
rmsnorm_bf16(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ w, __nv_bfloat16* __restrict__ xn,
             int T, int H) {
  typedef cub::BlockReduce<float, RN_THREADS> BlockReduce;
  __shared__ typename BlockReduce::TempStorage temp;
  __shared__ float s_rstd;
  const int row = blockIdx.x;
  if (row >= T) return;
  const __nv_bfloat16* xr = x + (long long)row * H;
  __nv_bfloat16* yr = xn + (long long)row * H;

  // generic over H: each thread walks 8-element chunks c0 = (threadIdx.x + k*512) * 8
  float ss = 0.0f;
  for (int c0 = threadIdx.x * RN_VEC; c0 < H; c0 += RN_THREADS * RN_VEC) {
    if ((H % RN_VEC) == 0) {
      uint4 raw = *reinterpret_cast<const uint4*>(xr + c0);
      const __nv_bfloat16* e = reinterpret_cast<const __nv_bfloat16*>(&raw);
#pragma unroll
      for (int j = 0; j < RN_VEC; ++j) { float v = __bfloat162float(e[j]); ss += v * v; }
    } else {
      for (int j = 0; j < RN_VEC && c0 + j < H; ++j) { float v = __bfloat162float(xr[c0 + j]); ss += v * v; }
    }
  }
  ss = BlockReduce(temp).Sum(ss);
  if (threadIdx.x == 0) s_rstd = rsqrtf(ss / (float)H + 1e-6f);
  __syncthreads();
  const float rstd = s_rstd;

  for (int c0 = threadIdx.x * RN_VEC; c0 < H; c0 += RN_THREADS * RN_VEC) {
    if ((H % RN_VEC) == 0) {
      uint4 raw = *reinterpret_cast<const uint4*>(xr + c0);
      uint4 wraw = *reinterpret_cast<const uint4*>(w + c0);
      const __nv_bfloat16* e = reinterpret_cast<const __nv_bfloat16*>(&raw);
      const __nv_bfloat16* we = reinterpret_cast<const __nv_bfloat16*>(&wraw);
      uint4 oraw;
      __nv_bfloat16* o = reinterpret_cast<__nv_bfloat16*>(&oraw);
#pragma unroll
      for (int j = 0; j < RN_VEC; ++j) o[j] = __float2bfloat16(__bfloat162float(e[j]) * rstd * __bfloat162float(we[j]));
      *reinterpret_cast<uint4*>(yr + c0) = oraw;
    } else {
      for (int j = 0; j < RN_VEC && c0 + j < H; ++j)
        yr[c0 + j] = __float2bfloat16(__bfloat162float(xr[c0 + j]) * rstd * __bfloat162float(w[c0 + j]));
    }
  }
}

#define GBM 128
#define GBN 128
#define GBK 32
#define GLD (GBK + 8)  // padded row length (bf16 elements): 80 bytes, a multiple of 16
#define GNT 256

// This thread's two 16-byte chunks of a 128 x 32 tile of a row-major [rows, K] bf16 matrix.
__device__ __forceinline__ void load_tile_bf16(const __nv_bfloat16* __restrict__ A, int rows, int K, int row0, int k0,
                                               int t, uint4 (&r)[2]) {
#pragma unroll
  for (int q = 0; q < 2; ++q) {
    const int idx = t + q * GNT;  // 0 .. 511
    const int row = row0 + idx / 4, col = k0 + (idx % 4) * 8;
    if (row < rows && col < K) r[q] = *reinterpret_cast<const uint4*>(A + (long long)row * K + col);
    else r[q] = make_uint4(0u, 0u, 0u, 0u);
  }
}
__device__ __forceinline__ void store_tile_bf16(__nv_bfloat16 (*S)[GLD], const uint4 (&r)[2], int t) {
#pragma unroll
  for (int q = 0; q < 2; ++q) {
    const int idx = t + q * GNT;
    *reinterpret_cast<uint4*>(&S[idx / 4][(idx % 4) * 8]) = r[q];
  }
}

extern "C" __global__ void __launch_bounds__(GNT)
gemm_bf16_nt(const __nv_bfloat16* __restrict__ A, const __nv_bfloat16* __restrict__ B, __nv_bfloat16* __restrict__ C,
             int M, int N, int K) {
  __shared__ __align__(128) __nv_bfloat16 As[GBM][GLD];
  __shared__ __align__(128) __nv_bfloat16 Bs[GBN][GLD];
  __shared__ __align__(128) float scratch[GNT / 32][16 * 16];

  const int t = threadIdx.x;
  const int warp = t / 32, lane = t % 32;
  const int wm = warp / 4, wn = warp % 4;  // warp tile: rows wm*64 .. +63, cols wn*32 .. +31
  const int m0 = blockIdx.y * GBM, n0 = blockIdx.x * GBN;

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[4][2];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

  uint4 ra[2], rb[2];
  load_tile_bf16(A, M, K, m0, 0, t, ra);
  load_tile_bf16(B, N, K, n0, 0, t, rb);
  store_tile_bf16(As, ra, t);
  store_tile_bf16(Bs, rb, t);
  __syncthreads();

  for (int k0 = 0; k0 < K; k0 += GBK) {
    const bool has_next = k0 + GBK < K;
    if (has_next) {
      load_tile_bf16(A, M, K, m0, k0 + GBK, t, ra);
      load_tile_bf16(B, N, K, n0, k0 + GBK, t, rb);
    }
#pragma unroll
    for (int kk = 0; kk < GBK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa[4];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> fb[2];
#pragma unroll
      for (int i = 0; i < 4; ++i) wmma::load_matrix_sync(fa[i], &As[wm * 64 + i * 16][kk], GLD);
#pragma unroll
      for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(fb[j], &Bs[wn * 32 + j * 16][kk], GLD);  // (k, n) at Bs[n][k]
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
    }
    __syncthreads();
    if (has_next) {
      store_tile_bf16(As, ra, t);
      store_tile_bf16(Bs, rb, t);
      __syncthreads();
    }
  }

  // epilogue: each 16x16 fragment goes through this warp's scratch, then out as bf16
  float* sc = scratch[warp];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      wmma::store_matrix_sync(sc, acc[i][j], 16, wmma::mem_row_major);
      __syncwarp();
      const int r = lane / 2, cc = (lane % 2) * 8;
      const int m = m0 + wm * 64 + i * 16 + r;
      const int n = n0 + wn * 32 + j * 16 + cc;
      if (m < M) {
        __nv_bfloat16* p = C + (long long)m * N + n;
        if ((N % 8) == 0 && n + 8 <= N) {
          uint4 o;
          __nv_bfloat16* oe = reinterpret_cast<__nv_bfloat16*>(&o);
#pragma unroll
          for (int q = 0; q < 8; ++q) oe[q] = __float2bfloat16(sc[r * 16 + cc + q]);
          *reinterpret_cast<uint4*>(p) = o;
        } else {
          for (int q = 0; q < 8; ++q)
            if (n + q < N) p[q] = __float2bfloat16(sc[r * 16 + cc + q]);
        }
      }
      __syncwarp();  // scratch is reused by the next fragment
    }
  }
}
