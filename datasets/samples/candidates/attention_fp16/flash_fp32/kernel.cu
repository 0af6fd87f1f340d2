// out = softmax((q @ k^T) * 0.125, dim=-1) @ v per head; q, k, v, out [BH, S, D] float16, D = 64.
// Fused, flash-attention style, all math in float32 (FFMA): one thread per query row keeps its q
// row and its output accumulator (64 + 64 floats) in registers and streams over the keys with an
// online softmax (running max m, running sum l, accumulator rescaled when the max grows). K and V
// tiles of 64 keys are staged in shared memory as float (all threads read the same key: broadcast).
// Like the reference, each score q.k is rounded to float16 (bmm output) before the 0.125 scale.
#include <cuda_fp16.h>

#define HD 64      // head dim (must equal D)
#define QT 128     // queries (threads) per block
#define KT 64      // keys per shared-memory tile

extern "C" __global__ void __launch_bounds__(QT)
attention_fp16(const __half* __restrict__ q, const __half* __restrict__ k, const __half* __restrict__ v,
               __half* __restrict__ out, int BH, int S) {
  __shared__ __align__(16) float Ks[KT][HD];
  __shared__ __align__(16) float Vs[KT][HD];
  const int bh = blockIdx.y;
  const int qi = blockIdx.x * QT + threadIdx.x;
  const long long head = (long long)bh * S * HD;
  const bool valid = qi < S;

  float qr[HD], o[HD];
  if (valid) {
    const uint4* qp = reinterpret_cast<const uint4*>(q + head + (long long)qi * HD);
#pragma unroll
    for (int c = 0; c < HD / 8; ++c) {
      uint4 raw = qp[c];
      const __half* e = reinterpret_cast<const __half*>(&raw);
#pragma unroll
      for (int j = 0; j < 8; ++j) qr[c * 8 + j] = __half2float(e[j]);
    }
  } else {
#pragma unroll
    for (int d = 0; d < HD; ++d) qr[d] = 0.0f;
  }
#pragma unroll
  for (int d = 0; d < HD; ++d) o[d] = 0.0f;
  float m = __int_as_float(0xff800000);  // -inf
  float l = 0.0f;

  for (int k0 = 0; k0 < S; k0 += KT) {
    const int nk = min(KT, S - k0);
    // stage K and V tiles (64 keys x 64 dims, 16-byte loads, converted to float)
    for (int i = threadIdx.x; i < KT * HD / 8; i += QT) {
      const int key = i / (HD / 8), c = (i % (HD / 8)) * 8;
      float kf[8], vf[8];
      if (key < nk) {
        const long long off = head + (long long)(k0 + key) * HD + c;
        uint4 kr = *reinterpret_cast<const uint4*>(k + off);
        uint4 vr = *reinterpret_cast<const uint4*>(v + off);
        const __half* ke = reinterpret_cast<const __half*>(&kr);
        const __half* ve = reinterpret_cast<const __half*>(&vr);
#pragma unroll
        for (int j = 0; j < 8; ++j) { kf[j] = __half2float(ke[j]); vf[j] = __half2float(ve[j]); }
      } else {
#pragma unroll
        for (int j = 0; j < 8; ++j) { kf[j] = 0.0f; vf[j] = 0.0f; }
      }
      *reinterpret_cast<float4*>(&Ks[key][c]) = make_float4(kf[0], kf[1], kf[2], kf[3]);
      *reinterpret_cast<float4*>(&Ks[key][c + 4]) = make_float4(kf[4], kf[5], kf[6], kf[7]);
      *reinterpret_cast<float4*>(&Vs[key][c]) = make_float4(vf[0], vf[1], vf[2], vf[3]);
      *reinterpret_cast<float4*>(&Vs[key][c + 4]) = make_float4(vf[4], vf[5], vf[6], vf[7]);
    }
    __syncthreads();

    for (int j = 0; j < nk; ++j) {
      float dot = 0.0f;
#pragma unroll
      for (int d = 0; d < HD; d += 4) {
        const float4 kv = *reinterpret_cast<const float4*>(&Ks[j][d]);
        dot = fmaf(qr[d], kv.x, dot);
        dot = fmaf(qr[d + 1], kv.y, dot);
        dot = fmaf(qr[d + 2], kv.z, dot);
        dot = fmaf(qr[d + 3], kv.w, dot);
      }
      const float s = __half2float(__float2half_rn(dot)) * 0.125f;  // fp16 scores, then scale
      if (s > m) {  // new running max: rescale what has been accumulated so far
        const float corr = expf(m - s);
        l *= corr;
#pragma unroll
        for (int d = 0; d < HD; ++d) o[d] *= corr;
        m = s;
      }
      const float p = expf(s - m);
      l += p;
#pragma unroll
      for (int d = 0; d < HD; d += 4) {
        const float4 vv = *reinterpret_cast<const float4*>(&Vs[j][d]);
        o[d] = fmaf(p, vv.x, o[d]);
        o[d + 1] = fmaf(p, vv.y, o[d + 1]);
        o[d + 2] = fmaf(p, vv.z, o[d + 2]);
        o[d + 3] = fmaf(p, vv.w, o[d + 3]);
      }
    }
    __syncthreads();  // before the next tile overwrites Ks / Vs
  }

  if (valid) {
    const float inv = 1.0f / l;
    uint4* op = reinterpret_cast<uint4*>(out + head + (long long)qi * HD);
#pragma unroll
    for (int c = 0; c < HD / 8; ++c) {
      uint4 raw;
      __half* e = reinterpret_cast<__half*>(&raw);
#pragma unroll
      for (int j = 0; j < 8; ++j) e[j] = __float2half_rn(o[c * 8 + j] * inv);
      op[c] = raw;
    }
  }
}
