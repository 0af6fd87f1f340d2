#pragma once
// The CUDA driver API, reached through the CUDA runtime's entry-point query instead of by linking
// libcuda: a binary that links libcuda.so.1 cannot even start on a machine without an NVIDIA
// driver, and the worker executable (in compile mode) and the CPU tests must run there.

#include <cuda.h>

namespace kforge {

struct CudaDriver {
  decltype(&::cuGetErrorName) GetErrorName = nullptr;
  decltype(&::cuGetErrorString) GetErrorString = nullptr;
  decltype(&::cuCtxGetCurrent) CtxGetCurrent = nullptr;
  decltype(&::cuCtxGetId) CtxGetId = nullptr;
  decltype(&::cuCtxGetDevice) CtxGetDevice = nullptr;
  decltype(&::cuCtxSynchronize) CtxSynchronize = nullptr;
  decltype(&::cuDeviceGetAttribute) DeviceGetAttribute = nullptr;
  decltype(&::cuModuleLoadData) ModuleLoadData = nullptr;
  decltype(&::cuModuleGetFunction) ModuleGetFunction = nullptr;
  decltype(&::cuModuleUnload) ModuleUnload = nullptr;
  decltype(&::cuLaunchKernel) LaunchKernel = nullptr;
  decltype(&::cuFuncGetAttribute) FuncGetAttribute = nullptr;
  decltype(&::cuFuncSetAttribute) FuncSetAttribute = nullptr;
  decltype(&::cuStreamSynchronize) StreamSynchronize = nullptr;
  decltype(&::cuMemsetD8Async) MemsetD8Async = nullptr;
  decltype(&::cuOccupancyMaxActiveBlocksPerMultiprocessor) OccupancyMaxActiveBlocksPerMultiprocessor = nullptr;
};

// Resolved once; throws a runtime error when no driver is installed (and retries on the next call).
const CudaDriver& cuda_driver();

}  // namespace kforge
