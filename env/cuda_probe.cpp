#include "env/cuda_probe.h"

#include <cuda_runtime_api.h>

namespace kforge {

bool cuda_device_present(std::string* why) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    if (why) *why = cudaGetErrorString(e);
    cudaGetLastError();  // clear it
    return false;
  }
  if (count < 1) {
    if (why) *why = "no CUDA device is visible";
    return false;
  }
  return true;
}

}  // namespace kforge
