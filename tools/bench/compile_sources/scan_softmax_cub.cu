// Row softmax and its running (cumulative) sum in one pass: BlockReduce for max and sum,
// BlockScan for the inclusive prefix of the probabilities.
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

constexpr int kThreads = 512;
constexpr int kItems = 4;

extern "C" __global__ void __launch_bounds__(kThreads) softmax_cumsum(const float* __restrict__ x, float* __restrict__ p,
                                                                     float* __restrict__ cum, int cols) {
  using Reduce = cub::BlockReduce<float, kThreads>;
  using Scan = cub::BlockScan<float, kThreads>;
  __shared__ union {
    typename Reduce::TempStorage reduce;
    typename Scan::TempStorage scan;
  } tmp;
  __shared__ float shared_max, shared_sum;
  const long long base = static_cast<long long>(blockIdx.x) * cols;
  float v[kItems];
  float m = -INFINITY;
#pragma unroll
  for (int i = 0; i < kItems; ++i) {
    int c = threadIdx.x * kItems + i;
    v[i] = c < cols ? x[base + c] : -INFINITY;
    m = fmaxf(m, v[i]);
  }
  float bm = Reduce(tmp.reduce).Reduce(m, ::cuda::maximum<>{});
  if (threadIdx.x == 0) shared_max = bm;
  __syncthreads();
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < kItems; ++i) {
    v[i] = __expf(v[i] - shared_max);
    s += v[i];
  }
  float bs = Reduce(tmp.reduce).Sum(s);
  if (threadIdx.x == 0) shared_sum = bs;
  __syncthreads();
#pragma unroll
  for (int i = 0; i < kItems; ++i) v[i] /= shared_sum;
  float out[kItems];
  Scan(tmp.scan).InclusiveSum(v, out);
#pragma unroll
  for (int i = 0; i < kItems; ++i) {
    int c = threadIdx.x * kItems + i;
    if (c < cols) {
      p[base + c] = v[i];
      cum[base + c] = out[i];
    }
  }
}
