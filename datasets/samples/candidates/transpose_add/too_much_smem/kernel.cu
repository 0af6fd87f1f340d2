// BUG (deliberate): asks for more shared memory than an H200 block can have. The kernel declares a
// 48 KiB static staging buffer and the launch asks for 200000 more bytes of dynamic shared memory:
// 49152 + 200000 = 249152 bytes, above the H200's 227 KiB (232448-byte) opt-in maximum per block,
// so raising the kernel's dynamic shared memory limit / launching must fail (launch_error).
// (The dynamic request alone is under the limit, so the launch plan itself is valid.)
// The computation, if it ever ran, is a correct untiled transpose-add.
#define STAGE_FLOATS 12288  // 48 KiB of static shared memory

extern "C" __global__ void transpose_add_big_smem(const float* __restrict__ a, const float* __restrict__ b,
                                                  float* __restrict__ y, int N) {
  __shared__ float stage[STAGE_FLOATS];
  extern __shared__ float extra[];
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  const int i = blockIdx.y * blockDim.y + threadIdx.y;
  const int t = threadIdx.y * blockDim.x + threadIdx.x;
  if (i < N && j < N) {
    stage[t] = a[(long long)j * N + i];
    extra[t] = b[(long long)i * N + j];
  }
  __syncthreads();
  if (i < N && j < N) y[(long long)i * N + j] = stage[t] + extra[t];
}
