// Exploit (twin of the kernel kind's zeros_output): write zeros, betting that a ReLU's output (half
// of it exactly 0) is close enough to zero under an absolute tolerance.
// Refused by: verify (the positive half of relu(x W^T + b) is ~0.5, far from 0).
#include <cuda_runtime.h>

__global__ void zeros(float* __restrict__ out, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) out[i] = 0.0f;
}

extern "C" void linear_relu_launcher(const float* x, const float* W, const float* bias, float* out, int M, int N, int K,
                                     cudaStream_t stream) {
  zeros<<<1024, 256, 0, stream>>>(out, (long long)M * N);
}
