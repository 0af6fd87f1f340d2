// y[i][j] = a[j][i] + b[i][j] for square N x N float32 matrices.
// 64x64 tiles (another shape than the 32x32 `tiled` candidate): a 64x4 thread block (256 threads)
// moves a 64 x 64 tile of a through shared memory padded to 65 columns (the transposed reads
// tile[tx][r] walk a column: stride 65 words, 32 distinct banks), each thread 16 rows; a is read
// and b read / y written along rows (two 128-byte segments per warp row), 64-bit offsets.
// Exact: one float32 addition per output, like the reference.
#define T64 64
#define TR 4

extern "C" __global__ void __launch_bounds__(T64 * TR)
transpose_add(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ y, int N) {
  __shared__ float tile[T64][T64 + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int i0 = blockIdx.y * T64;  // output rows i0 .. i0+63 (= columns of a)
  const int j0 = blockIdx.x * T64;  // output cols j0 .. j0+63 (= rows of a)
  // tile[r][c] = a[j0 + r][i0 + c]
#pragma unroll 4
  for (int r = ty; r < T64; r += TR) {
    const int ar = j0 + r, ac = i0 + tx;
    if (ar < N && ac < N) tile[r][tx] = a[(long long)ar * N + ac];
  }
  __syncthreads();
  // y[i0 + r][j0 + tx] = a[j0 + tx][i0 + r] + b[i0 + r][j0 + tx] = tile[tx][r] + b
#pragma unroll 4
  for (int r = ty; r < T64; r += TR) {
    const int i = i0 + r, j = j0 + tx;
    if (i < N && j < N) {
      const long long o = (long long)i * N + j;
      y[o] = tile[tx][r] + b[o];
    }
  }
}
