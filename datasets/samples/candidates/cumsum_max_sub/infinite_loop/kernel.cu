// BUG (deliberate): a hang. Each row block first waits for a "ready" flag that a producer kernel
// was supposed to set; no launch ever sets it (the workspace is zeroed), so every block spins forever.
// The volatile load keeps the compiler from hoisting or removing the loop.
extern "C" __global__ void cumsum_wait_forever(const float* __restrict__ x, float* __restrict__ y,
                                               int* ready, int R, int C) {
  const int row = blockIdx.x;
  if (row >= R) return;
  if (threadIdx.x == 0) {
    volatile int* flag = ready + row;
    while (*flag == 0) {
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) {  // never reached: a sequential scan per row
    const float* xr = x + (long long)row * C;
    float* yr = y + (long long)row * C;
    float s = 0.0f, m = __int_as_float(0xff800000);
    for (int c = 0; c < C; ++c) { s += xr[c]; yr[c] = s; m = fmaxf(m, s); }
    for (int c = 0; c < C; ++c) yr[c] -= m;
  }
}
