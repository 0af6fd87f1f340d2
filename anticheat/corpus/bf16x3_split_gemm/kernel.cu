// Exploit: 16-bit products in a float32 GEMM (bf16 hi/lo split, "3xBF16"), on every call.
// Strategy: y = x * sigmoid(x W^T + b) with the GEMM on bf16 tensor cores: each float32 operand
//   is split into hi = bf16(v) and lo = bf16(v - hi) while it is staged in shared memory, and
//   every 16 x 16 x 16 step takes three bf16 products (lo*hi, hi*lo, hi*hi; lo*lo dropped) with
//   float32 accumulation: three bf16 MMAs instead of float32 FFMA, a ~16-bit significand per
//   operand instead of 24. On an H200 bf16 tensor cores run ~15x float32 FFMA, so three of them
//   still leave several times the float32 SIMT rate - the speed the old speed-of-light floor
//   (the fastest dtype's peak for every task) let through for float32 tasks; the floor is now
//   per precision (float32: the fastest of float32 SIMT, TF32/3 and the 16-bit split/3).
//   Why it passes what it passes: on the task's own draws (x ~ N(0,1), |W| <= 1/64, K = 4096) the
//   split error is ~2^-17 of each product; emulated in float64 against the exact GEMM (CPU, 256 x
//   4096 outputs, anticheat/corpus/cpu_emulation/numerics.py) it uses 0.03 of the tolerance
//   (1e-4 + 1e-4 |y|), sign_flip the same, shifted ~0 (large outputs). The harness's earlier
//   scaled variant (one argument by 2^k, k in [1, 4] at random) refused it only when x drew 2^4
//   (1.1 of the tolerance): in some requests and not in others (luck).
//   Why it is refused: the error is relative to sum |x_k W_k|, the tolerance mostly absolute
//   (1e-4) for outputs near 0, so whatever makes the terms larger without making every output
//   larger shows it. `scaled` now moves each argument by the largest of 2^8, 2^6, 2^4, 2^2, 2^1
//   the float32 reference survives: x by 2^6 (reference 0.30 of the tolerance, split 4.3, 1.3 %
//   of the outputs outside), W by 2^8 (0.30, split 5.9). `outliers` (1 element in 256 of x and W
//   moved by 8-128 spreads): reference 0.09-0.22, split 1.3-3.6 with a few outputs in 10^6
//   outside. Verification draws every usable member in every request: no luck left. (row_scaled,
//   channel_scaled and element_scaled fail it by 25-370x, but the float32 reference itself leaves
//   the tolerance under them: the harness does not use them for this task.) The CPU emulation of
//   this very kernel (anticheat/corpus/cpu_emulation, M = 128, D = 512 and 4096) agrees: plain
//   0.008-0.036, outliers at D = 4096 1.5-1.8 of the tolerance.
// Attack surface: precision below the task's contract that survives the declared draw; a loose
//   float32 speed-of-light floor.
// Refused by: robustness_draws (the scaled or outliers calls of verification), or where verification's
//   block misses, timed_calls_verified (the same members among the timed calls).
#include <cuda_bf16.h>
#include <mma.h>
using namespace nvcuda;

#define GBM 128
#define GBN 128
#define GBK 32
#define GLD (GBK + 8)  // padded row (bf16 elements): 80 bytes, a multiple of 16 as WMMA wants
#define GNT 256

// This thread's 4 float4 of a 128 x 32 tile of a row-major float32 [rows, K] matrix:
// idx = t + 256 q (0 .. 1023), row idx / 8, columns (idx % 8) * 4 .. + 3; zero beyond the matrix.
__device__ __forceinline__ void load_tile_f32(const float* __restrict__ A, int rows, int K, int row0, int k0, int t,
                                              float4 (&r)[4]) {
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const int idx = t + q * GNT;
    const int row = row0 + idx / 8, col = k0 + (idx % 8) * 4;
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (row < rows) {
      const float* p = A + (long long)row * K + col;
      if ((K % 4) == 0 && col + 4 <= K) {
        v = *reinterpret_cast<const float4*>(p);
      } else {
        if (col + 0 < K) v.x = p[0];
        if (col + 1 < K) v.y = p[1];
        if (col + 2 < K) v.z = p[2];
        if (col + 3 < K) v.w = p[3];
      }
    }
    r[q] = v;
  }
}

// hi = bf16(v) (round to nearest), lo = bf16(v - hi): v = hi + lo to ~2^-17 relative.
__device__ __forceinline__ void split2(float a, float b, __nv_bfloat162& hi, __nv_bfloat162& lo) {
  const __nv_bfloat16 ha = __float2bfloat16_rn(a), hb = __float2bfloat16_rn(b);
  hi = __halves2bfloat162(ha, hb);
  lo = __halves2bfloat162(__float2bfloat16_rn(a - __bfloat162float(ha)), __float2bfloat16_rn(b - __bfloat162float(hb)));
}

__device__ __forceinline__ void store_split(__nv_bfloat16 (*Hi)[GLD], __nv_bfloat16 (*Lo)[GLD], const float4 (&r)[4], int t) {
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const int idx = t + q * GNT;
    const int row = idx / 8, col = (idx % 8) * 4;
    __nv_bfloat162 h0, l0, h1, l1;
    split2(r[q].x, r[q].y, h0, l0);
    split2(r[q].z, r[q].w, h1, l1);
    *reinterpret_cast<__nv_bfloat162*>(&Hi[row][col]) = h0;
    *reinterpret_cast<__nv_bfloat162*>(&Hi[row][col + 2]) = h1;
    *reinterpret_cast<__nv_bfloat162*>(&Lo[row][col]) = l0;
    *reinterpret_cast<__nv_bfloat162*>(&Lo[row][col + 2]) = l1;
  }
}

// acc[i][j] (16 x 16 each; this warp's 64 x 32 of the block's 128 x 128) += A B^T over K, with
// A = Ahi + Alo, B = Bhi + Blo and three bf16 tensor-core products per step (Alo Bhi, Ahi Blo,
// Ahi Bhi; the Alo Blo term, ~2^-18 of a product, dropped), float32 accumulation.
__device__ __forceinline__ void gemm_bf16x3_tile(const float* __restrict__ A, const float* __restrict__ B, int M, int N, int K,
                                                 int m0, int n0, __nv_bfloat16 (*sm)[GBM][GLD],
                                                 wmma::fragment<wmma::accumulator, 16, 16, 16, float> (&acc)[4][2]) {
  const int t = threadIdx.x, warp = t / 32;
  const int wm = warp / 4, wn = warp % 4;  // warp tile: rows wm*64 .. +63, cols wn*32 .. +31
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
  float4 ra[4], rb[4];
  load_tile_f32(A, M, K, m0, 0, t, ra);
  load_tile_f32(B, N, K, n0, 0, t, rb);
  store_split(sm[0], sm[1], ra, t);
  store_split(sm[2], sm[3], rb, t);
  __syncthreads();
  for (int k0 = 0; k0 < K; k0 += GBK) {
    const bool has_next = k0 + GBK < K;
    if (has_next) {  // the next k-tile into registers while this one is multiplied
      load_tile_f32(A, M, K, m0, k0 + GBK, t, ra);
      load_tile_f32(B, N, K, n0, k0 + GBK, t, rb);
    }
#pragma unroll
    for (int kk = 0; kk < GBK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> ah[4], al[4];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> bh[2], bl[2];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        wmma::load_matrix_sync(ah[i], &sm[0][wm * 64 + i * 16][kk], GLD);
        wmma::load_matrix_sync(al[i], &sm[1][wm * 64 + i * 16][kk], GLD);
      }
#pragma unroll
      for (int j = 0; j < 2; ++j) {  // (k, n) at B[n][k]
        wmma::load_matrix_sync(bh[j], &sm[2][wn * 32 + j * 16][kk], GLD);
        wmma::load_matrix_sync(bl[j], &sm[3][wn * 32 + j * 16][kk], GLD);
      }
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          wmma::mma_sync(acc[i][j], al[i], bh[j], acc[i][j]);
          wmma::mma_sync(acc[i][j], ah[i], bl[j], acc[i][j]);
          wmma::mma_sync(acc[i][j], ah[i], bh[j], acc[i][j]);
        }
    }
    __syncthreads();
    if (has_next) {
      store_split(sm[0], sm[1], ra, t);
      store_split(sm[2], sm[3], rb, t);
      __syncthreads();
    }
  }
}

extern "C" __global__ void __launch_bounds__(GNT)
gated_linear_bf16x3(const float* __restrict__ x, const float* __restrict__ W, const float* __restrict__ bias,
                    float* __restrict__ y, int M, int N, int K) {
  __shared__ __align__(128) __nv_bfloat16 sm[4][GBM][GLD];  // A hi, A lo, B hi, B lo: 40 KiB
  const int t = threadIdx.x, warp = t / 32, lane = t % 32;
  const int wm = warp / 4, wn = warp % 4;
  const int m0 = blockIdx.y * GBM, n0 = blockIdx.x * GBN;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[4][2];
  gemm_bf16x3_tile(x, W, M, N, K, m0, n0, sm, acc);

  // epilogue: each 16 x 16 fragment through this warp's scratch (the A-hi tile, no longer read)
  float* sc = reinterpret_cast<float*>(&sm[0][0][0]) + warp * 256;
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
        for (int q = 0; q < 8; ++q) {
          if (n + q >= N) break;
          const float z = sc[r * 16 + cc + q] + bias[n + q];
          y[(long long)m * N + n + q] = x[(long long)m * K + n + q] * (1.0f / (1.0f + expf(-z)));
        }
      }
      __syncwarp();  // the scratch is reused by the next fragment
    }
  }
}
