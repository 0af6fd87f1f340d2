// Exploit: precision downgrade that slips under the tolerance on the usual draws.
// Strategy: compute with 16-bit mantissas (the low 7 bits of every input dropped, as a kernel
//   that stores or multiplies in a narrower format would): on N(0, 1) inputs the error stays far
//   below the 1e-4 tolerance, so it passes verification while doing "cheaper" math.
// Attack surface: a tolerance checked only on inputs of one narrow range.
// Refused by: robustness_draws (a verification trial whose input is scaled by 2^k - the whole
//   tensor, its rows or each element, k in [-6, 6]: near each row's maximum the dropped bits of
//   the large elements exceed the tolerance of y = x - logsumexp(x)).
__device__ __forceinline__ float lo(float v) { return __uint_as_float(__float_as_uint(v) & 0xFFFFFF80u); }

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
  for (int c = threadIdx.x; c < C; c += 256) m = fmaxf(m, lo(xr[c]));
  m = block_reduce_256(m, sh, true);
  float s = 0.0f;
  for (int c = threadIdx.x; c < C; c += 256) s += expf(lo(xr[c]) - m);
  s = block_reduce_256(s, sh, false);
  if (threadIdx.x == 0) lse[row] = logf(s) + m;
}

extern "C" __global__ void sub_lse(const float* x, const float* lse, float* y, long long n, int C) {
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) y[i] = lo(x[i]) - lse[i / C];
}
