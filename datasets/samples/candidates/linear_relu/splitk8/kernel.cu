// act = relu(x @ W^T + b): x [M, K], W [N, K] (nn.Linear layout), b [N], act [M, N]; float32, no TF32.
// Split-K: K is cut into S slices of Ks (blockIdx.z = slice); each slice runs the 128x128x8
// register-tiled SGEMM (256 threads, 8x8 outputs per thread, register prefetch of the next k-tile,
// tiles k-major in shared memory) over its own k range and writes its partial products to
// partial[slice][M][N]; a second kernel adds the S partials in slice order (deterministic, no
// atomics), then the bias and ReLU. Chains of Ks = 512 FFMAs instead of one of 4096: another
// summation order than cuBLAS's, with shorter float32 chains. Bounds checked throughout (zero fill).
#define BM 128
#define BN 128
#define BK 8
#define NT 256

// This thread's 4 elements of a 128 x 8 tile of a row-major [rows, K] matrix, columns k0 .. k0 + 7
// limited to [.., kend): row r = t / 2, columns c .. c + 3 with c = k0 + (t % 2) * 4.
__device__ __forceinline__ float4 load_tile4(const float* __restrict__ A, int rows, int K, int kend, int row0, int k0, int t) {
  const int r = row0 + t / 2;
  const int c = k0 + (t % 2) * 4;
  float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  if (r < rows) {
    const float* p = A + (long long)r * K + c;
    if ((K % 4) == 0 && (c % 4) == 0 && c + 4 <= kend) {
      v = *reinterpret_cast<const float4*>(p);
    } else {
      if (c + 0 < kend) v.x = p[0];
      if (c + 1 < kend) v.y = p[1];
      if (c + 2 < kend) v.z = p[2];
      if (c + 3 < kend) v.w = p[3];
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
splitk_partials(const float* __restrict__ x, const float* __restrict__ W, float* __restrict__ partial, int M, int N, int K, int Ks) {
  __shared__ __align__(16) float As[BK][BM];
  __shared__ __align__(16) float Bs[BK][BN];
  const int t = threadIdx.x;
  const int trow = t / 16, tcol = t % 16;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int kbeg = blockIdx.z * Ks, kend = min(K, kbeg + Ks);

  float acc[8][8];
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;

  if (kbeg < kend) {
    float4 ra = load_tile4(x, M, K, kend, m0, kbeg, t);
    float4 rb = load_tile4(W, N, K, kend, n0, kbeg, t);
    store_tile4(As, ra, t);
    store_tile4(Bs, rb, t);
    __syncthreads();
    for (int k0 = kbeg; k0 < kend; k0 += BK) {
      const bool has_next = k0 + BK < kend;
      if (has_next) {  // prefetch the next k-tile into registers while computing this one
        ra = load_tile4(x, M, K, kend, m0, k0 + BK, t);
        rb = load_tile4(W, N, K, kend, n0, k0 + BK, t);
      }
#pragma unroll
      for (int kk = 0; kk < BK; ++kk) {
        float a[8], b[8];
        const float4 a0 = *reinterpret_cast<const float4*>(&As[kk][trow * 4]);
        const float4 a1 = *reinterpret_cast<const float4*>(&As[kk][64 + trow * 4]);
        const float4 b0 = *reinterpret_cast<const float4*>(&Bs[kk][tcol * 4]);
        const float4 b1 = *reinterpret_cast<const float4*>(&Bs[kk][64 + tcol * 4]);
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
  }

  // this slice's partial products (zeros for an empty slice): partial[z][m][n]
  float* out = partial + (long long)blockIdx.z * M * N;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int m = m0 + (i < 4 ? trow * 4 + i : 64 + trow * 4 + (i - 4));
    if (m >= M) continue;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int n = n0 + h * 64 + tcol * 4;
      float* p = out + (long long)m * N + n;
      if ((N % 4) == 0 && n + 4 <= N) {
        *reinterpret_cast<float4*>(p) = make_float4(acc[i][h * 4 + 0], acc[i][h * 4 + 1], acc[i][h * 4 + 2], acc[i][h * 4 + 3]);
      } else {
#pragma unroll
        for (int q = 0; q < 4; ++q)
          if (n + q < N) p[q] = acc[i][h * 4 + q];
      }
    }
  }
}

// act[i] = relu(sum over slices s = 0 .. S-1, in order, of partial[s][i] + b[i % N])
extern "C" __global__ void __launch_bounds__(256)
splitk_reduce(const float* __restrict__ partial, const float* __restrict__ bias, float* __restrict__ act, long long MN, int N, int S) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < MN; i += stride) {
    float s = partial[i];
    for (int z = 1; z < S; ++z) s += partial[(long long)z * MN + i];
    act[i] = fmaxf(s + bias[i % N], 0.0f);
  }
}
