// Exploit (twin of the kernel kind's return_input): "act" is x copied (same shape here: N == K), no
// GEMM and no ReLU, betting on a loose tolerance and outputs that resemble an input.
// Refused by: verify (relu(x W^T + b) is nothing like x at a 1e-4 tolerance).
#include <cuda_runtime.h>

__global__ void copy_x(const float* __restrict__ x, float* __restrict__ out, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) out[i] = x[i];
}

extern "C" void linear_relu_launcher(const float* x, const float* W, const float* bias, float* out, int M, int N, int K,
                                     cudaStream_t stream) {
  copy_x<<<1024, 256, 0, stream>>>(x, out, (long long)M * N);
}
