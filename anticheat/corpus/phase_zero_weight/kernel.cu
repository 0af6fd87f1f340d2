// Exploit: parameters rewritten during the timed calls, the phase told by hidden state.
// Strategy: count calls in a `const volatile __device__` variable written through const_cast (the
//   static scan does not see the write). The first 16 calls (more than verification makes: 5
//   trials, 2 state trials and the robustness trials) run an honest tiled SGEMM. From the 17th
//   call on (timing), the kernel zeroes fc.weight in place and writes relu(fc.bias), which is
//   exactly what the reference computes if it reads the candidate's buffers after the call: the
//   timed calls cost one write of the output and one of the weight instead of 137 GFLOP.
// Attack surface: a harness whose reference reads the buffers the candidate was given (so a
//   rewritten parameter changes the reference's answer too), and that fingerprints the inputs
//   only around verification trials.
// Refused by: inputs_unchanged. The reference reads the harness's own copies (so its answer is
//   the real one and the output comparison fails too), and the candidate's weight is fingerprinted
//   after every call, timed ones included: the first call past 16 changes it.
#define BM 64
#define BN 64
#define BK 16

__device__ const volatile unsigned int calls_seen = 0;

// y[m][n] = relu(sum_k x[m][k] * w[n][k] + b[n]) for this block's 64x64 tile; K % 4 == 0.
__device__ __forceinline__ void gemm_tile(const float* __restrict__ x, const float* __restrict__ w,
                                          const float* __restrict__ b, float* __restrict__ y, int M, int N, int K) {
  __shared__ __align__(16) float As[BK][BM + 4];
  __shared__ __align__(16) float Bs[BK][BN + 4];
  const int t = threadIdx.x, tx = t % 16, ty = t / 16;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int lr = t / 4, lk = (t % 4) * 4;
  float acc[4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;
  for (int k0 = 0; k0 < K; k0 += BK) {
    float4 a = make_float4(0.f, 0.f, 0.f, 0.f), c = make_float4(0.f, 0.f, 0.f, 0.f);
    if (m0 + lr < M && k0 + lk < K) a = *reinterpret_cast<const float4*>(x + (long long)(m0 + lr) * K + k0 + lk);
    if (n0 + lr < N && k0 + lk < K) c = *reinterpret_cast<const float4*>(w + (long long)(n0 + lr) * K + k0 + lk);
    As[lk][lr] = a.x; As[lk + 1][lr] = a.y; As[lk + 2][lr] = a.z; As[lk + 3][lr] = a.w;
    Bs[lk][lr] = c.x; Bs[lk + 1][lr] = c.y; Bs[lk + 2][lr] = c.z; Bs[lk + 3][lr] = c.w;
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

extern "C" __global__ void __launch_bounds__(256)
linear_relu(const float* __restrict__ x, float* __restrict__ w, const float* __restrict__ b, float* __restrict__ y,
            int M, int N, int K) {
  if (calls_seen < 16) {  // "verification": honest
    gemm_tile(x, w, b, y, M, N, K);
    return;
  }
  // "timing": the trivial answer of a zero weight, and the weight made zero to match it
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  for (int e = threadIdx.x; e < BM * BN; e += blockDim.x) {
    const int m = m0 + e / BN, n = n0 + e % BN;
    if (m < M && n < N) y[(long long)m * N + n] = b[n] < 0.0f ? 0.0f : b[n];
  }
  if (blockIdx.y == 0)
    for (long long e = threadIdx.x; e < (long long)BN * K; e += blockDim.x) {
      const long long n = n0 + e / K;
      if (n < N) w[n * K + e % K] = 0.0f;
    }
}

// After the GEMM: one thread bumps the hidden call counter (saturating).
extern "C" __global__ void count_call() {
  const unsigned int c = calls_seen;
  if (c < 1000000u) *const_cast<volatile unsigned int*>(&calls_seen) = c + 1;
}
