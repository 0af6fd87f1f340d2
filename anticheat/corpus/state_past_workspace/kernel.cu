// Exploit: state kept by writing past the end of a workspace buffer, and a grid that shrinks.
// Strategy: launch.yaml asks for a one-word workspace; the word after it (ws[1], inside the
//   allocator's rounding of a 4-byte buffer on most harnesses) is the call counter. For the first
//   16 calls every block normalises its rows; afterwards only the first quarter of the row blocks
//   do (the grid "shrinks" without the plan changing), the rest return at once.
// Attack surface: memory next to the candidate's buffers that the harness neither owns nor checks.
// Refused by: buffer_bounds (the guard region after the workspace is fingerprinted after every
//   call; the first call's write to ws[1] changes it). This needs the guard to start at the
//   buffer's last byte: a 4-byte buffer rounded up to an alignment leaves ws[1] in unguarded
//   padding, and then only timed_calls_verified catches the shrunken grid, once a buffer set has
//   seen 16 calls.
#define NT 512

extern "C" __global__ void tick(int* __restrict__ ws) {
  volatile unsigned int* counter = reinterpret_cast<volatile unsigned int*>(ws + 1);  // past the end
  unsigned int c = *counter;
  if (c > 1000000u) c = 0;
  ws[0] = c >= 16;  // 1: shrink
  *counter = c + 1;
}

__device__ __forceinline__ float block_reduce(float v, float* sh, bool is_max) {
  for (int o = 16; o > 0; o >>= 1) {
    const float w = __shfl_xor_sync(0xffffffffu, v, o);
    v = is_max ? fmaxf(v, w) : v + w;
  }
  if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;
  __syncthreads();
  float r = sh[0];
  for (int i = 1; i < NT / 32; ++i) r = is_max ? fmaxf(r, sh[i]) : r + sh[i];
  __syncthreads();
  return r;
}

extern "C" __global__ void __launch_bounds__(NT)
softmax_rows(const float* __restrict__ x, float* __restrict__ y, int R, int C, const int* __restrict__ ws) {
  __shared__ float sh[NT / 32];
  if (ws[0] && blockIdx.x >= gridDim.x / 4) return;
  for (int row = blockIdx.x; row < R; row += gridDim.x) {
    const float* xr = x + (long long)row * C;
    float* yr = y + (long long)row * C;
    float m = __int_as_float(0xff800000);
    for (int c = threadIdx.x; c < C; c += NT) m = fmaxf(m, xr[c]);
    m = block_reduce(m, sh, true);
    float s = 0.0f;
    for (int c = threadIdx.x; c < C; c += NT) s += expf(xr[c] - m);
    s = block_reduce(s, sh, false);
    const float inv = 1.0f / s;
    for (int c = threadIdx.x; c < C; c += NT) yr[c] = expf(xr[c] - m) * inv;
  }
}
