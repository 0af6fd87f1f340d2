// GroupNorm(G groups, eps 1e-5, affine) then SiLU on x[N, C, H, W], float32. Two kernels.
// A group (n, g) is the contiguous slab of (C/G)*H*W elements starting at (n*G + g) * GS.
// Each group is cut into S chunks of `chunk` elements (the last may be shorter or empty).
//  1) gn_chunk_stats: one block per chunk: chunk mean, then M2 = sum((x - chunk_mean)^2)
//     (two passes, the second from cache), cub::BlockReduce; writes (count, mean, M2).
//  2) gn_apply_silu: one block per chunk: combines its group's S partials (Chan's parallel
//     formula), var = M2 / GS (biased), rstd = 1/sqrt(var + eps), then
//     y = (x - mean) * rstd * w[c] + b[c]; out = y / (1 + exp(-y)); float4 when aligned.
#include <cub/block/block_reduce.cuh>

#define GN_THREADS 256

extern "C" __global__ void __launch_bounds__(GN_THREADS)
gn_chunk_stats(const float* __restrict__ x, float* __restrict__ partial, long long GS, long long chunk, int S) {
  typedef cub::BlockReduce<float, GN_THREADS> BlockReduce;
  __shared__ typename BlockReduce::TempStorage temp;
  __shared__ float s_mean;
  const long long ng = blockIdx.x / S;
  const int s = blockIdx.x % S;
  const long long start = (long long)s * chunk;
  const long long end = min(start + chunk, GS);
  const long long cnt = end > start ? end - start : 0;
  const float* base = x + ng * GS;
  const bool vec = (GS % 4 == 0) && (chunk % 4 == 0);

  float sum = 0.0f;
  if (vec) {
    const float4* p = reinterpret_cast<const float4*>(base + start);
    for (long long i = threadIdx.x; i < cnt / 4; i += GN_THREADS) {
      float4 t = p[i];
      sum += (t.x + t.y) + (t.z + t.w);
    }
  } else {
    for (long long i = start + threadIdx.x; i < end; i += GN_THREADS) sum += base[i];
  }
  sum = BlockReduce(temp).Sum(sum);
  if (threadIdx.x == 0) s_mean = cnt > 0 ? sum / (float)cnt : 0.0f;
  __syncthreads();
  const float mean = s_mean;

  float m2 = 0.0f;
  if (vec) {
    const float4* p = reinterpret_cast<const float4*>(base + start);
    for (long long i = threadIdx.x; i < cnt / 4; i += GN_THREADS) {
      float4 t = p[i];
      float a = t.x - mean, b = t.y - mean, c = t.z - mean, d = t.w - mean;
      m2 += (a * a + b * b) + (c * c + d * d);
    }
  } else {
    for (long long i = start + threadIdx.x; i < end; i += GN_THREADS) {
      float a = base[i] - mean;
      m2 += a * a;
    }
  }
  m2 = BlockReduce(temp).Sum(m2);  // reuse is safe: the __syncthreads above separates the uses
  if (threadIdx.x == 0) {
    float* out = partial + ((long long)ng * S + s) * 3;
    out[0] = (float)cnt;
    out[1] = mean;
    out[2] = m2;
  }
}

extern "C" __global__ void __launch_bounds__(GN_THREADS)
gn_apply_silu(const float* __restrict__ x, const float* __restrict__ partial, const float* __restrict__ w,
              const float* __restrict__ bias, float* __restrict__ out, long long GS, long long chunk, int S,
              int G, int CPG, long long HW) {
  const long long ng = blockIdx.x / S;
  const int s = blockIdx.x % S;
  const int g = (int)(ng % G);

  // Combine the S chunk statistics of this group (every thread does it; S is small).
  float n_a = 0.0f, mean_a = 0.0f, m2_a = 0.0f;
  for (int k = 0; k < S; ++k) {
    const float* p = partial + ((long long)ng * S + k) * 3;
    float n_b = p[0];
    if (n_b <= 0.0f) continue;
    float mean_b = p[1], m2_b = p[2];
    float n = n_a + n_b;
    float delta = mean_b - mean_a;
    mean_a = mean_a + delta * (n_b / n);
    m2_a = m2_a + m2_b + delta * delta * (n_a * n_b / n);
    n_a = n;
  }
  const float mean = mean_a;
  const float rstd = 1.0f / sqrtf(m2_a / (float)GS + 1e-5f);

  const long long start = (long long)s * chunk;
  const long long end = min(start + chunk, GS);
  const long long cnt = end > start ? end - start : 0;
  const float* xb = x + ng * GS;
  float* ob = out + ng * GS;
  const int c_base = g * CPG;

  if ((GS % 4 == 0) && (chunk % 4 == 0) && (HW % 4 == 0)) {  // a float4 never straddles two channels
    const float4* p = reinterpret_cast<const float4*>(xb + start);
    float4* q = reinterpret_cast<float4*>(ob + start);
    for (long long i = threadIdx.x; i < cnt / 4; i += GN_THREADS) {
      const long long off = start + 4 * i;  // offset inside the group
      const int c = c_base + (int)(off / HW);
      const float sc = rstd * w[c];
      const float sh = bias[c];
      float4 t = p[i];
      float v[4] = {t.x, t.y, t.z, t.w};
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        float yv = (v[j] - mean) * sc + sh;
        v[j] = yv / (1.0f + expf(-yv));
      }
      q[i] = make_float4(v[0], v[1], v[2], v[3]);
    }
  } else {
    for (long long off = start + threadIdx.x; off < end; off += GN_THREADS) {
      const int c = c_base + (int)(off / HW);
      float yv = (xb[off] - mean) * (rstd * w[c]) + bias[c];
      ob[off] = yv / (1.0f + expf(-yv));
    }
  }
}
