// Swish (KernelBench level 1, 25_Swish): a CHEAT on purpose. The output is right, but the kernel
// also writes it back over its input (x <- x * sigmoid(x)), which the harness refuses: a candidate
// may not change its inputs (anticheat: inputs_unchanged).
extern "C" __global__ void swish_in_place(float* x, float* __restrict__ y, long long n) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float v = x[i];
    const float s = v / (1.0f + expf(-v));
    y[i] = s;
    x[i] = s;
  }
}
