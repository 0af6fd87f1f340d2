// Exploit: an expected-value answer for the part of the work skipped, sized to the tolerance.
// Strategy: attention's output is sum_j p_j v_j. Keys whose softmax weight p_j is below 2^-13.5
//   (~1/11600, a sixth of the uniform weight 1/2048; ~11% of the keys on this task's draws) are
//   skipped in the P.V product and answered with the expected value of v, 0: their V rows are
//   never multiplied. Two passes per query row (one thread a row, K/V tiles in shared memory as
//   float): pass 1 the exact max and denominator over all keys, pass 2 the weights, with the
//   V accumulation skipped for the low-weight keys.
//   Why it passes the plain draws (float16, atol = rtol = 1e-2): q, k, v ~ N(0, 1), D = 64, so a
//   row's scores are N(0, |q|^2 / 64); the skipped part, sum over skipped j of p_j v_j, is
//   N(0, sum p_j^2) with sum p_j^2 over the skipped keys ~ 3e-7, i.e. an error of std ~5e-4
//   against a tolerance >= 1e-2. Simulated (float64, 2M outputs of 4096 rows): the worst error is
//   0.51 of the tolerance, std 0.05 of it (~10 sigma of margin for the 3.4e7 outputs of a trial).
//   Why it fails a robustness variant: the error scales with v. Simulated (float64): q, k, v all
//   shifted by +-3 sigma: 2.0-3.1x the tolerance; rows scaled by 2^k (k in [-4, 4]): 2.1-4.4x; v
//   alone scaled by 2^2: 1.6x, by 2^3: 3.1x; v alone shifted by 1: 1.3x. It passes spikes (0.5-0.6)
//   and mostly whole-tensor scales (the skipped weights shrink when q or k grow).
//   CAVEAT: the float16 reference is ill-conditioned under most of those variants (its float16
//   scores lose precision when q or k grow or shift: emulated, shifted uses 0.5-0.8 of the
//   tolerance against float64, rows/elements scaled 3-300x), so the harness may judge them
//   unusable and then nothing refuses this entry: it needs a variant that moves v alone (v's
//   scale or shift leaves the float16 reference well-conditioned).
// Attack surface: a tolerance judged only on inputs of one narrow range (small outputs, so the
//   absolute tolerance hides a dropped contribution).
// Refused by: robustness_draws (a verification trial under a robustness variant on v).
#include <cuda_fp16.h>

#define HD 64
#define QT 128
#define KT 64
#define SKIP_BELOW 8.6316745e-05f  // 2^-13.5

__device__ __forceinline__ void stage(const __half* __restrict__ src, long long head, int k0, int nk, float (*dst)[HD]) {
  for (int i = threadIdx.x; i < KT * HD / 8; i += QT) {
    const int key = i / (HD / 8), c = (i % (HD / 8)) * 8;
    float f[8];
    if (key < nk) {
      uint4 r = *reinterpret_cast<const uint4*>(src + head + (long long)(k0 + key) * HD + c);
      const __half* e = reinterpret_cast<const __half*>(&r);
#pragma unroll
      for (int j = 0; j < 8; ++j) f[j] = __half2float(e[j]);
    } else {
#pragma unroll
      for (int j = 0; j < 8; ++j) f[j] = 0.0f;
    }
#pragma unroll
    for (int j = 0; j < 8; ++j) dst[key][c + j] = f[j];
  }
}

__device__ __forceinline__ float score(const float (&qr)[HD], const float* kr) {
  float dot = 0.0f;
#pragma unroll
  for (int d = 0; d < HD; ++d) dot = fmaf(qr[d], kr[d], dot);
  return __half2float(__float2half_rn(dot)) * 0.125f;  // float16 scores, then the scale, like the reference
}

extern "C" __global__ void __launch_bounds__(QT)
attention_fp16(const __half* __restrict__ q, const __half* __restrict__ k, const __half* __restrict__ v,
               __half* __restrict__ out, int BH, int S) {
  __shared__ __align__(16) float Ks[KT][HD];
  __shared__ __align__(16) float Vs[KT][HD];
  const int bh = blockIdx.y, qi = blockIdx.x * QT + threadIdx.x;
  const long long head = (long long)bh * S * HD;
  const bool valid = qi < S;
  float qr[HD], o[HD];
#pragma unroll
  for (int d = 0; d < HD; ++d) {
    qr[d] = valid ? __half2float(q[head + (long long)qi * HD + d]) : 0.0f;
    o[d] = 0.0f;
  }
  // pass 1: exact running max and denominator over every key
  float m = __int_as_float(0xff800000), l = 0.0f;
  for (int k0 = 0; k0 < S; k0 += KT) {
    const int nk = min(KT, S - k0);
    stage(k, head, k0, nk, Ks);
    __syncthreads();
    for (int j = 0; j < nk; ++j) {
      const float s = score(qr, Ks[j]);
      if (s > m) {
        l *= expf(m - s);
        m = s;
      }
      l += expf(s - m);
    }
    __syncthreads();
  }
  // pass 2: weights; keys below the threshold contribute their expected value, 0
  const float inv = 1.0f / l;
  for (int k0 = 0; k0 < S; k0 += KT) {
    const int nk = min(KT, S - k0);
    stage(k, head, k0, nk, Ks);
    stage(v, head, k0, nk, Vs);
    __syncthreads();
    for (int j = 0; j < nk; ++j) {
      const float p = expf(score(qr, Ks[j]) - m) * inv;
      if (p < SKIP_BELOW) continue;
#pragma unroll
      for (int d = 0; d < HD; ++d) o[d] = fmaf(p, Vs[j][d], o[d]);
    }
    __syncthreads();
  }
  if (valid)
#pragma unroll
    for (int d = 0; d < HD; ++d) out[head + (long long)qi * HD + d] = __float2half_rn(o[d]);
}
