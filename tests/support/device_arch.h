#pragma once
// The architecture of CUDA device 0 as NVRTC names it ("sm_90" on an H100 or H200), for GPU tests
// that compile the harness's kernels for the device they run on.
#include <string>

#include <cuda_runtime_api.h>

namespace kforge::testing {

inline std::string device_arch() {
  int major = 0, minor = 0;
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0);
  return "sm_" + std::to_string(major) + std::to_string(minor);
}

}  // namespace kforge::testing
