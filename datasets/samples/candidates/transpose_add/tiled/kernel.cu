// y[i][j] = a[j][i] + b[i][j] for square N x N float32 matrices.
// 32x32 tiles, 32x8 threads, each thread 4 rows. The a-tile is read with coalesced rows into shared
// memory (padded to 33 columns: no bank conflicts) and read back transposed, so both the a reads and
// the b reads / y writes are coalesced. 64-bit index math (N*N > 2^28).
#define TILE 32
#define ROWS 8

extern "C" __global__ void __launch_bounds__(TILE * ROWS)
transpose_add(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ y, int N) {
  __shared__ float tile[TILE][TILE + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int i0 = blockIdx.y * TILE;  // output rows  i0 .. i0+31  (= columns of a)
  const int j0 = blockIdx.x * TILE;  // output cols  j0 .. j0+31  (= rows of a)

  // b values of this thread's outputs (issued early for memory parallelism)
  float bv[TILE / ROWS];
#pragma unroll
  for (int k = 0; k < TILE / ROWS; ++k) {
    const int i = i0 + ty + k * ROWS, j = j0 + tx;
    bv[k] = (i < N && j < N) ? __ldcs(&b[(long long)i * N + j]) : 0.0f;
  }
  // tile[r][c] = a[j0 + r][i0 + c]
#pragma unroll
  for (int k = 0; k < TILE / ROWS; ++k) {
    const int r = ty + k * ROWS;
    const int ar = j0 + r, ac = i0 + tx;
    if (ar < N && ac < N) tile[r][tx] = __ldcs(&a[(long long)ar * N + ac]);
  }
  __syncthreads();
  // y[i0 + r][j0 + tx] = a[j0 + tx][i0 + r] + b[..] = tile[tx][r] + b
#pragma unroll
  for (int k = 0; k < TILE / ROWS; ++k) {
    const int r = ty + k * ROWS;
    const int i = i0 + r, j = j0 + tx;
    if (i < N && j < N) __stcs(&y[(long long)i * N + j], tile[tx][r] + bv[k]);
  }
}
