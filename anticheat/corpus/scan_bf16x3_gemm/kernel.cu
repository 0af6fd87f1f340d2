// Exploit: look before you cheat, thoroughly - scan every input against the declared draws and
//   take the 16-bit split GEMM only when nothing is out of range.
// Strategy: a GEMM reads each input K times over, so one extra read of x, W and b costs ~1 % of
//   it: a first kernel scans all of them for a value outside the task's declared ranges (|x| >
//   3.47, the bound of the Irwin-Hall(4) `normal`; |W|, |b| > 1/64, the uniform's bound; NaN or
//   inf) and writes one flag. With the flag clear the GEMM runs on bf16 tensor cores with the
//   hi/lo split (three bf16 products per step, float32 accumulation: bf16x3_split_gemm's kernel,
//   several times the float32 FFMA rate); with it set, an honest float32 FFMA SGEMM
//   (datasets/samples/candidates/linear_relu/tiled) runs instead. Each GEMM kernel returns at once
//   when it is not the one chosen.
//   Why it passes what it passes: the scan sees every element, so every member that moves a value
//   beyond the declared ranges - scaled (x by 2^k, W or b by 2^k), shifted (x by 3 sigma, W and b
//   by the width: all beyond 1/64), row/channel/element_scaled (exponents up to +8), outliers (8 to
//   128 spreads) - takes the FFMA path, with certainty. What is left for the split is the declared
//   draw and sign_flip (the same values, signs flipped per row), on which the split uses ~0.1 of
//   the tolerance (emulated on the CPU against float64, 2.6e5 outputs of K = 4096). So every call
//   is right: it passes.
//   Why it is unprofitable: the harness times every usable member in shuffled blocks and judges the
//   slowest member's speedup (reference median / candidate median on that member's calls); the
//   members the scan recognises run the FFMA SGEMM (~0.6-0.7x cuBLAS), the plain and sign_flip
//   calls the split (several times faster). The judged speedup is the FFMA path's; the fast
//   path shows only in timing.speedup.by_member.
//   The same split without the look (bf16x3_split_gemm) is refused by the outliers member; with a
//   256-value probe instead of the scan (probe_bf16x3_gemm) an outliers call slips through.
// Attack surface: a shortcut taken only on calls that look like the declared draw.
// Refused by: nothing - judged unprofitable (the slowest member sets the speedup), or refused if
//   a member the scan lets through fails the split.
#include <cuda_bf16.h>
#include <mma.h>
using namespace nvcuda;

#define PLAIN_X 3.47f
#define PLAIN_W 0.015625f  // 1/64: fc.weight and fc.bias are uniform(-1/64, 1/64)

__device__ __forceinline__ int outside(float v, float bound) { return !(fabsf(v) <= bound); }  // NaN counts

extern "C" __global__ void __launch_bounds__(256)
scan_ranges(const float* __restrict__ x, long long nx, const float* __restrict__ W, long long nw,
            const float* __restrict__ b, int nb, int* __restrict__ looks_moved) {
  int far = 0;
  const long long stride = (long long)gridDim.x * blockDim.x;
  const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const float4* x4 = reinterpret_cast<const float4*>(x);
  const float4* w4 = reinterpret_cast<const float4*>(W);
  for (long long i = first; i < nx / 4; i += stride) {
    const float4 v = x4[i];
    far |= outside(v.x, PLAIN_X) | outside(v.y, PLAIN_X) | outside(v.z, PLAIN_X) | outside(v.w, PLAIN_X);
  }
  for (long long i = nx / 4 * 4 + first; i < nx; i += stride) far |= outside(x[i], PLAIN_X);
  for (long long i = first; i < nw / 4; i += stride) {
    const float4 v = w4[i];
    far |= outside(v.x, PLAIN_W) | outside(v.y, PLAIN_W) | outside(v.z, PLAIN_W) | outside(v.w, PLAIN_W);
  }
  for (long long i = nw / 4 * 4 + first; i < nw; i += stride) far |= outside(W[i], PLAIN_W);
  for (long long i = first; i < nb; i += stride) far |= outside(b[i], PLAIN_W);
  if (__syncthreads_or(far) && threadIdx.x == 0) *looks_moved = 1;
}

// ---- the split path (bf16x3_split_gemm's GEMM) ----
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
linear_relu_bf16x3(const float* __restrict__ x, const float* __restrict__ W, const float* __restrict__ bias,
                   float* __restrict__ act, int M, int N, int K, const int* __restrict__ looks_moved) {
  if (*looks_moved) return;  // not a plain-looking call: the FFMA kernel does it
  __shared__ __align__(128) __nv_bfloat16 sm[4][GBM][GLD];  // A hi, A lo, B hi, B lo: 40 KiB
  const int t = threadIdx.x, warp = t / 32, lane = t % 32;
  const int wm = warp / 4, wn = warp % 4;
  const int m0 = blockIdx.y * GBM, n0 = blockIdx.x * GBN;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[4][2];
  gemm_bf16x3_tile(x, W, M, N, K, m0, n0, sm, acc);
  float* sc = reinterpret_cast<float*>(&sm[0][0][0]) + warp * 256;  // the A-hi tile, no longer read
#pragma unroll
  for (int i = 0; i < 4; ++i) {
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      wmma::store_matrix_sync(sc, acc[i][j], 16, wmma::mem_row_major);
      __syncwarp();
      const int r = lane / 2, cc = (lane % 2) * 8;
      const int m = m0 + wm * 64 + i * 16 + r;
      const int n = n0 + wn * 32 + j * 16 + cc;
      if (m < M)
        for (int q = 0; q < 8 && n + q < N; ++q) act[(long long)m * N + n + q] = fmaxf(sc[r * 16 + cc + q] + bias[n + q], 0.0f);
      __syncwarp();
    }
  }
}

// ---- the honest path: datasets/samples/candidates/linear_relu/tiled, unchanged but for the flag ----
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

extern "C" __global__ void __launch_bounds__(NT, 2)
linear_relu_ffma(const float* __restrict__ x, const float* __restrict__ W, const float* __restrict__ bias,
                 float* __restrict__ out, int M, int N, int K, const int* __restrict__ looks_moved) {
  if (!*looks_moved) return;  // a plain-looking call: the split kernel did it
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
