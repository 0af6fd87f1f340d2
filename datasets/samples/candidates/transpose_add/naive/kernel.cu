// y[i][j] = a[j][i] + b[i][j]: one thread per output element, 2D grid, no tiling
// (b reads and y writes coalesced, a reads strided by N). 64-bit offsets.
extern "C" __global__ void transpose_add_naive(const float* a, const float* b, float* y, int N) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  const int i = blockIdx.y * blockDim.y + threadIdx.y;
  if (i < N && j < N) y[(long long)i * N + j] = a[(long long)j * N + i] + b[(long long)i * N + j];
}
