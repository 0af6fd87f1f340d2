// Row-wise softmax of the imported module's 12 x 40 input: one warp per row, the row's max and sum
// by warp shuffles; stable (exp(x - max)).
extern "C" __global__ void softmax_rows(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
  int row = blockIdx.x;
  int lane = threadIdx.x;
  if (row >= rows) return;
  const float* xr = x + (long long)row * cols;
  float* yr = y + (long long)row * cols;
  float m = __int_as_float(0xff800000);  // -inf
  for (int c = lane; c < cols; c += 32) m = fmaxf(m, xr[c]);
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  float s = 0.0f;
  for (int c = lane; c < cols; c += 32) s += expf(xr[c] - m);
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  for (int c = lane; c < cols; c += 32) yr[c] = expf(xr[c] - m) / s;
}
