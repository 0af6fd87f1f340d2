// 256-bin histogram of bytes: each block counts its tile in shared memory with
// cub::BlockHistogram, then adds its bins to the global histogram.
#include <cub/block/block_histogram.cuh>
#include <cub/block/block_load.cuh>

constexpr int kThreads = 256;
constexpr int kItems = 16;
constexpr int kBins = 256;

extern "C" __global__ void byte_histogram(const unsigned char* __restrict__ data, unsigned int* __restrict__ bins, int n) {
  using Load = cub::BlockLoad<unsigned char, kThreads, kItems, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
  using Hist = cub::BlockHistogram<unsigned char, kThreads, kItems, kBins>;
  __shared__ typename Load::TempStorage load_tmp;
  __shared__ typename Hist::TempStorage hist_tmp;
  __shared__ unsigned int local[kBins];
  const int tile = kThreads * kItems;
  const long long offset = static_cast<long long>(blockIdx.x) * tile;
  unsigned char items[kItems];
  int valid = static_cast<int>(min(static_cast<long long>(tile), n - offset));
  Load(load_tmp).Load(data + offset, items, valid, static_cast<unsigned char>(0));
  Hist(hist_tmp).Histogram(items, local);
  __syncthreads();
  // Padding (valid < tile) was counted as byte 0: take it back.
  if (threadIdx.x == 0) local[0] -= tile - valid;
  __syncthreads();
  for (int b = threadIdx.x; b < kBins; b += kThreads)
    if (local[b]) atomicAdd(&bins[b], local[b]);
}
