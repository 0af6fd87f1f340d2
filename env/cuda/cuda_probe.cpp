#include "env/cuda/cuda_probe.h"

#include <utility>

#include <cuda_runtime_api.h>

#include "env/cuda/cuda_check.h"

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

std::string device_arch(int device) {
  int major = 0, minor = 0;
  for (auto [attr, value] : {std::pair{cudaDevAttrComputeCapabilityMajor, &major}, std::pair{cudaDevAttrComputeCapabilityMinor, &minor}}) {
    cuda_check(cudaDeviceGetAttribute(value, attr, device), "device " + std::to_string(device) + ": compute capability");
  }
  return "sm_" + std::to_string(major) + std::to_string(minor) + ((major == 9 || major == 10) ? "a" : "");
}

}  // namespace kforge
