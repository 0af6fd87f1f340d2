// Exploit: a parameter rewritten in place on every call (no phase detection).
// Strategy: fc.weight [N, K] is read row by row along K by an NT GEMM; the kernel first transposes
//   it in place (N == K == 4096 in this task) so that the GEMM reads it as [K, N], coalesced along
//   N like the activations' tile. Every call's answer is right (it is computed from the values the
//   call was given), but the weight buffer is left transposed. In a deployment whose weights are
//   loaded once this "one-time layout change" would corrupt the next call; a harness that hands
//   the same parameter buffer to every call, or reads the candidate's buffers for the reference,
//   is fooled into timing a layout the task does not give.
// Attack surface: harnesses that check outputs only, or fingerprint inputs only some of the time.
// Refused by: inputs_unchanged (the candidate's fc.weight is fingerprinted after every call; the
//   first call changes it).
#define BM 64
#define BN 64
#define BK 16
#define TT 32

// In-place transpose of the square matrix w [n, n]: block (bx, by) with by <= bx swaps tile
// (by, bx) with tile (bx, by); a diagonal tile is transposed onto itself. Tiles of different blocks
// are disjoint.
extern "C" __global__ void __launch_bounds__(256) transpose_in_place(float* __restrict__ w, int n) {
  const int bx = blockIdx.x, by = blockIdx.y;
  if (by > bx) return;
  __shared__ float t1[TT][TT + 1], t2[TT][TT + 1];
  const int tx = threadIdx.x % TT, ty = threadIdx.x / TT;  // 32 x 8
  for (int r = ty; r < TT; r += 8) {
    const int r1 = by * TT + r, c1 = bx * TT + tx;  // tile (by, bx)
    const int r2 = bx * TT + r, c2 = by * TT + tx;  // tile (bx, by)
    t1[r][tx] = (r1 < n && c1 < n) ? w[(long long)r1 * n + c1] : 0.0f;
    t2[r][tx] = (r2 < n && c2 < n) ? w[(long long)r2 * n + c2] : 0.0f;
  }
  __syncthreads();
  for (int r = ty; r < TT; r += 8) {
    const int r1 = by * TT + r, c1 = bx * TT + tx;
    const int r2 = bx * TT + r, c2 = by * TT + tx;
    if (r1 < n && c1 < n) w[(long long)r1 * n + c1] = t2[tx][r];
    if (r2 < n && c2 < n) w[(long long)r2 * n + c2] = t1[tx][r];
  }
}

// y[m][n] = relu(sum_k x[m][k] * wt[k][n] + b[n]), wt = the transposed weight [K, N]; K, N % 4 == 0.
extern "C" __global__ void __launch_bounds__(256)
gemm_nn_relu(const float* __restrict__ x, const float* __restrict__ wt, const float* __restrict__ b, float* __restrict__ y,
             int M, int N, int K) {
  __shared__ __align__(16) float As[BK][BM + 4];
  __shared__ __align__(16) float Bs[BK][BN + 4];
  const int t = threadIdx.x, tx = t % 16, ty = t / 16;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int lr = t / 4, lk = (t % 4) * 4;     // A loader: row lr, k lk..lk+3
  const int br = t / 16, bc = (t % 16) * 4;   // B loader: k row br, n bc..bc+3
  float acc[4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;
  for (int k0 = 0; k0 < K; k0 += BK) {
    float4 a = make_float4(0.f, 0.f, 0.f, 0.f), c = make_float4(0.f, 0.f, 0.f, 0.f);
    if (m0 + lr < M && k0 + lk < K) a = *reinterpret_cast<const float4*>(x + (long long)(m0 + lr) * K + k0 + lk);
    if (k0 + br < K && n0 + bc < N) c = *reinterpret_cast<const float4*>(wt + (long long)(k0 + br) * N + n0 + bc);
    As[lk][lr] = a.x; As[lk + 1][lr] = a.y; As[lk + 2][lr] = a.z; As[lk + 3][lr] = a.w;
    *reinterpret_cast<float4*>(&Bs[br][bc]) = c;
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      const float4 ra = *reinterpret_cast<const float4*>(&As[kk][ty * 4]);
      const float4 rb = *reinterpret_cast<const float4*>(&Bs[kk][tx * 4]);
      const float av[4] = {ra.x, ra.y, ra.z, ra.w}, bv[4] = {rb.x, rb.y, rb.z, rb.w};
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int m = m0 + ty * 4 + i, n = n0 + tx * 4 + j;
      if (m < M && n < N) {
        const float v = acc[i][j] + b[n];
        y[(long long)m * N + n] = v < 0.0f ? 0.0f : v;
      }
    }
}
