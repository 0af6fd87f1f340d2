#include <cuda_runtime.h>
// Zeroes n floats on `stream` (the inputs_zeroed_by_kernel exploit's helper).
__global__ void zero_floats(float* p, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) p[i] = 0.0f;
}

extern "C" void zero_launcher(float* p, long long n, cudaStream_t stream) { zero_floats<<<1024, 256, 0, stream>>>(p, n); }
