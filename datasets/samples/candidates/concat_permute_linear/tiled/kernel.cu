// proj = reshape(permute(cat([a, b], dim=1), [0, 2, 3, 1]), [B*H*W, 2C]) @ W^T + bias, float32.
// No concat/permute copies: row p = (bi, hw) of the GEMM's A operand and column c (< 2C) are read
// straight from a[bi][c][hw] (c < C) or b[bi][c - C][hw] (c >= C). In NCHW, consecutive pixels are
// contiguous, so the A tile (As[k][m]) loads are coalesced along m with no transpose.
// GEMM: M = B*H*W rows, N = O outputs, K = 2C; float32 FFMA accumulation (no TF32).
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

// A element (p, k) of the virtual [M, 2C] matrix; 0 outside.
__device__ __forceinline__ float cat_elem(const float* __restrict__ a, const float* __restrict__ b, long long p, int k,
                                          long long M, int C, long long HW) {
  if (p >= M || k >= 2 * C) return 0.0f;
  const long long bi = p / HW, hw = p % HW;
  const float* src = k < C ? a : b;
  const int ch = k < C ? k : k - C;
  return src[(bi * C + ch) * HW + hw];
}

// This thread's 4 A-tile elements: k = t / 32, pixels m4 .. m4 + 3 with m4 = (t % 32) * 4.
__device__ __forceinline__ float4 load_cat4(const float* __restrict__ a, const float* __restrict__ b, long long m0, int k0,
                                           long long M, int C, long long HW, int t) {
  const int k = k0 + t / 32;
  const long long p = m0 + (t % 32) * 4;
  // 4 consecutive pixels of one image (HW % 4 == 0 and p % 4 == 0): one aligned 16-byte load
  if ((HW % 4) == 0 && p + 4 <= M && k < 2 * C) {
    const long long bi = p / HW, hw = p % HW;
    const float* src = k < C ? a : b;
    const int ch = k < C ? k : k - C;
    return *reinterpret_cast<const float4*>(src + (bi * C + ch) * HW + hw);
  }
  return make_float4(cat_elem(a, b, p, k, M, C, HW), cat_elem(a, b, p + 1, k, M, C, HW),
                     cat_elem(a, b, p + 2, k, M, C, HW), cat_elem(a, b, p + 3, k, M, C, HW));
}

__device__ __forceinline__ void store_cat4(float (*S)[BM], float4 v, int t) {
  *reinterpret_cast<float4*>(&S[t / 32][(t % 32) * 4]) = v;
}

extern "C" __global__ void __launch_bounds__(NT, 2)
concat_permute_linear(const float* __restrict__ a, const float* __restrict__ b, const float* __restrict__ W,
                      const float* __restrict__ bias, float* __restrict__ out, long long M, int N, int C, long long HW) {
  const int K = 2 * C;
  __shared__ __align__(16) float As[BK][BM];
  __shared__ __align__(16) float Bs[BK][BN];
  const int t = threadIdx.x;
  const int trow = t / 16, tcol = t % 16;
  const long long m0 = (long long)blockIdx.y * BM;
  const int n0 = blockIdx.x * BN;

  float acc[8][8];
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;

  float4 ra = load_cat4(a, b, m0, 0, M, C, HW, t);
  float4 rb = load_tile4(W, N, K, n0, 0, t);
  store_cat4(As, ra, t);
  store_tile4(Bs, rb, t);
  __syncthreads();

  for (int k0 = 0; k0 < K; k0 += BK) {
    const bool has_next = k0 + BK < K;
    if (has_next) {  // prefetch the next k-tile into registers while computing this one
      ra = load_cat4(a, b, m0, k0 + BK, M, C, HW, t);
      rb = load_tile4(W, N, K, n0, k0 + BK, t);
    }
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      float af[8], bf[8];
      float4 a0 = *reinterpret_cast<const float4*>(&As[kk][trow * 4]);
      float4 a1 = *reinterpret_cast<const float4*>(&As[kk][64 + trow * 4]);
      float4 b0 = *reinterpret_cast<const float4*>(&Bs[kk][tcol * 4]);
      float4 b1 = *reinterpret_cast<const float4*>(&Bs[kk][64 + tcol * 4]);
      af[0] = a0.x; af[1] = a0.y; af[2] = a0.z; af[3] = a0.w; af[4] = a1.x; af[5] = a1.y; af[6] = a1.z; af[7] = a1.w;
      bf[0] = b0.x; bf[1] = b0.y; bf[2] = b0.z; bf[3] = b0.w; bf[4] = b1.x; bf[5] = b1.y; bf[6] = b1.z; bf[7] = b1.w;
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(af[i], bf[j], acc[i][j]);
    }
    __syncthreads();  // everyone is done reading this tile
    if (has_next) {
      store_cat4(As, ra, t);
      store_tile4(Bs, rb, t);
      __syncthreads();
    }
  }

  // epilogue: + bias, store
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const long long m = m0 + (i < 4 ? trow * 4 + i : 64 + trow * 4 + (i - 4));
    if (m >= M) continue;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int n = n0 + h * 64 + tcol * 4;
      float v[4];
#pragma unroll
      for (int q = 0; q < 4; ++q) v[q] = (n + q < N) ? acc[i][h * 4 + q] + bias[n + q] : 0.0f;
      float* p = out + m * N + n;
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
