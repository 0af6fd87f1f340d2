#include "env/gpu/cuda_probe.h"

#include <cuda_runtime_api.h>

namespace kforge {

int visible_gpu_count(std::string* why) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    if (why) *why = cudaGetErrorString(e);
    cudaGetLastError();  // clear it
    return 0;
  }
  if (count < 1 && why) *why = "no CUDA device is visible";
  return count;
}

bool cuda_device_present(std::string* why) { return visible_gpu_count(why) > 0; }

}  // namespace kforge
