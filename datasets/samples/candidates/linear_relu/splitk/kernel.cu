// act = relu(x @ W^T + b), x [M, K], W [N, K], float32. Split-K: K is cut into S slices; kernel 1
// computes each slice's partial products for a 64x64 output tile (shared-memory SGEMM, 16-deep
// k-steps, 4x4 register micro-tile per thread, FFMA in float32) into a workspace partial[S][M][N];
// kernel 2 sums the S partials of every output in slice order (deterministic: no atomics), adds the
// bias and applies ReLU. The summation order differs from cuBLAS's on purpose: each thread's
// running sum covers K / S products, then S partial sums are added, which also shortens the float32
// accumulation chains (error ~sqrt(K/S) roundings of partial sums instead of sqrt(K)).
// Requires K % 4 == 0 and N % 4 == 0 (float4 loads); any M, N, K otherwise.
#define BM 64
#define BN 64
#define BK 16

extern "C" __global__ void __launch_bounds__(256)
splitk_partials(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ partial,
                int M, int N, int K, int kslice) {
  __shared__ __align__(16) float As[BK][BM + 4];
  __shared__ __align__(16) float Bs[BK][BN + 4];
  const int t = threadIdx.x, tx = t % 16, ty = t / 16;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN, s = blockIdx.z;
  const int kb = s * kslice, ke = min(K, kb + kslice);
  const int lr = t / 4, lk = (t % 4) * 4;
  float acc[4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;
  for (int k0 = kb; k0 < ke; k0 += BK) {
    float4 a = make_float4(0.f, 0.f, 0.f, 0.f), c = make_float4(0.f, 0.f, 0.f, 0.f);
    const int k = k0 + lk;
    if (m0 + lr < M && k < ke) a = *reinterpret_cast<const float4*>(x + (long long)(m0 + lr) * K + k);
    if (n0 + lr < N && k < ke) c = *reinterpret_cast<const float4*>(w + (long long)(n0 + lr) * K + k);
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
  float* ps = partial + (long long)s * M * N;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int m = m0 + ty * 4 + i, n = n0 + tx * 4;
    if (m >= M) continue;
    if (n + 3 < N) {
      *reinterpret_cast<float4*>(ps + (long long)m * N + n) = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
    } else {
      for (int j = 0; j < 4; ++j)
        if (n + j < N) ps[(long long)m * N + n + j] = acc[i][j];
    }
  }
}

// act[i] = relu(partial[0][i] + ... + partial[S-1][i] + b[i % N]), in slice order.
extern "C" __global__ void __launch_bounds__(256)
splitk_reduce(const float* __restrict__ partial, const float* __restrict__ b, float* __restrict__ act, long long MN, int N, int S) {
  const long long n4 = MN / 4;
  const float4* p4 = reinterpret_cast<const float4*>(partial);
  float4* a4 = reinterpret_cast<float4*>(act);
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += (long long)gridDim.x * blockDim.x) {
    float4 acc = p4[i];
    for (int s = 1; s < S; ++s) {
      const float4 v = p4[(long long)s * n4 + i];
      acc.x += v.x; acc.y += v.y; acc.z += v.z; acc.w += v.w;
    }
    const int n = (int)((i * 4) % N);  // N % 4 == 0: the four outputs share a row
    float4 o;
    o.x = acc.x + b[n];     o.x = o.x < 0.0f ? 0.0f : o.x;
    o.y = acc.y + b[n + 1]; o.y = o.y < 0.0f ? 0.0f : o.y;
    o.z = acc.z + b[n + 2]; o.z = o.z < 0.0f ? 0.0f : o.z;
    o.w = acc.w + b[n + 3]; o.w = o.w < 0.0f ? 0.0f : o.w;
    a4[i] = o;
  }
}
