// Sorts each row of 2048 float keys with one 256-thread block (8 keys per thread): CUB's
// BlockLoad (transpose), BlockRadixSort, BlockStore.
#include <cub/block/block_load.cuh>
#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_store.cuh>

constexpr int kThreads = 256;
constexpr int kItems = 8;

extern "C" __global__ void __launch_bounds__(kThreads) sort_rows(const float* __restrict__ x, float* __restrict__ y, int cols) {
  using Load = cub::BlockLoad<float, kThreads, kItems, cub::BLOCK_LOAD_TRANSPOSE>;
  using Sort = cub::BlockRadixSort<float, kThreads, kItems>;
  using Store = cub::BlockStore<float, kThreads, kItems, cub::BLOCK_STORE_TRANSPOSE>;
  __shared__ union {
    typename Load::TempStorage load;
    typename Sort::TempStorage sort;
    typename Store::TempStorage store;
  } tmp;
  const float* row = x + static_cast<long long>(blockIdx.x) * cols;
  float keys[kItems];
  Load(tmp.load).Load(row, keys, cols, INFINITY);
  __syncthreads();
  Sort(tmp.sort).Sort(keys);
  __syncthreads();
  Store(tmp.store).Store(y + static_cast<long long>(blockIdx.x) * cols, keys, cols);
}
