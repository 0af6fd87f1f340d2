// NOTE: kept as a "numerically wrong" example: even double-precision prefix sums (closer to the
// exact answer than the reference) fail, because torch.cumsum's own float32 rounding near the row
// maximum exceeds the 1e-4 tolerance; only its exact summation order passes (see ../torch_order).
// y = cumsum(x, dim=1) - amax(cumsum(x, dim=1), dim=1), float32 in/out, prefix sums in double (CUB BlockScan<double>).
// One block of 512 threads per row, 16 items per thread (blocked arrangement: thread t owns
// columns 16t .. 16t+15). cub::BlockLoad (warp-transpose, coalesced) -> cub::BlockScan inclusive
// sum -> cub::BlockReduce max over the valid items -> subtract -> cub::BlockStore (warp-transpose).
// x is read once and y written once. Supports C <= 512 * 16 = 8192 (the task has C = 8192).
#include <cub/block/block_load.cuh>
#include <cub/block/block_store.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/block/block_reduce.cuh>

#define CS_THREADS 512
#define CS_ITEMS 16

struct FMaxOp {  // max functor for cub::BlockReduce::Reduce (cub::Max is gone in CCCL 3)
  __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

extern "C" __global__ void __launch_bounds__(CS_THREADS)
cumsum_max_sub_f64(const float* __restrict__ x, float* __restrict__ y, int R, int C) {
  typedef cub::BlockLoad<float, CS_THREADS, CS_ITEMS, cub::BLOCK_LOAD_WARP_TRANSPOSE> BlockLoad;
  typedef cub::BlockStore<float, CS_THREADS, CS_ITEMS, cub::BLOCK_STORE_WARP_TRANSPOSE> BlockStore;
  typedef cub::BlockScan<double, CS_THREADS> BlockScan;
  typedef cub::BlockReduce<float, CS_THREADS> BlockReduce;
  __shared__ union {
    typename BlockLoad::TempStorage load;
    typename BlockStore::TempStorage store;
    typename BlockScan::TempStorage scan;
    typename BlockReduce::TempStorage reduce;
  } temp;
  __shared__ float s_max;

  const int row = blockIdx.x;
  if (row >= R) return;
  const float* xr = x + (long long)row * C;
  float* yr = y + (long long)row * C;
  const float NEG_INF = __int_as_float(0xff800000);

  float items[CS_ITEMS];
  BlockLoad(temp.load).Load(xr, items, C, 0.0f);  // columns >= C read as 0 (they do not change the sums)
  __syncthreads();
  double d[CS_ITEMS];
#pragma unroll
  for (int j = 0; j < CS_ITEMS; ++j) d[j] = (double)items[j];
  BlockScan(temp.scan).InclusiveSum(d, d);
  __syncthreads();
#pragma unroll
  for (int j = 0; j < CS_ITEMS; ++j) items[j] = (float)d[j];  // c rounded once to float32, like the reference's output

  float m = NEG_INF;
#pragma unroll
  for (int j = 0; j < CS_ITEMS; ++j)
    if (threadIdx.x * CS_ITEMS + j < C) m = fmaxf(m, items[j]);
  m = BlockReduce(temp.reduce).Reduce(m, FMaxOp());
  if (threadIdx.x == 0) s_max = m;
  __syncthreads();
  m = s_max;

#pragma unroll
  for (int j = 0; j < CS_ITEMS; ++j) items[j] -= m;
  BlockStore(temp.store).Store(yr, items, C);  // only the first C columns are written
}
