// y = x - logsumexp(x, dim=-1), float32, two kernels:
//   1) row_lse: one block of 256 threads per row, strided loops over global memory for the max and
//      the sum of exp(x - max) (shared-memory tree reductions), lse[row] = max + log(sum) to workspace;
//   2) sub_lse: elementwise y = x - lse[row], grid-stride, 64-bit indices.
__device__ float block_reduce_256(float v, float* sh, bool is_max) {
  sh[threadIdx.x] = v;
  __syncthreads();
  for (int s = 128; s > 0; s >>= 1) {
    if (threadIdx.x < s) sh[threadIdx.x] = is_max ? fmaxf(sh[threadIdx.x], sh[threadIdx.x + s]) : sh[threadIdx.x] + sh[threadIdx.x + s];
    __syncthreads();
  }
  float r = sh[0];
  __syncthreads();
  return r;
}

extern "C" __global__ void row_lse(const float* x, float* lse, int R, int C) {
  __shared__ float sh[256];
  const int row = blockIdx.x;
  if (row >= R) return;
  const float* xr = x + (long long)row * C;
  float m = __int_as_float(0xff800000);
  for (int c = threadIdx.x; c < C; c += 256) m = fmaxf(m, xr[c]);
  m = block_reduce_256(m, sh, true);
  float s = 0.0f;
  for (int c = threadIdx.x; c < C; c += 256) s += expf(xr[c] - m);
  s = block_reduce_256(s, sh, false);
  if (threadIdx.x == 0) lse[row] = logf(s) + m;
}

extern "C" __global__ void sub_lse(const float* x, const float* lse, float* y, long long n, int C) {
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) y[i] = x[i] - lse[i / C];
}
