#include "env/cuda/cuda_driver.h"

#include <cuda_runtime_api.h>

#include "configs/error.h"

namespace kforge {

namespace {

template <typename Fn>
void resolve(Fn& fn, const char* symbol) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
  // ABI version 12000: the oldest toolkit the build accepts (cuCtxGetId appeared in 12.0).
  cudaError_t e = cudaGetDriverEntryPointByVersion(symbol, &p, 12000, cudaEnableDefault, &status);
  KFORGE_CHECK(e == cudaSuccess && status == cudaDriverEntryPointSuccess && p, runtime,
               "cannot reach the CUDA driver's " << symbol << " (" << cudaGetErrorString(e) << "); is an NVIDIA driver installed?");
  fn = reinterpret_cast<Fn>(p);
}

CudaDriver load() {
  CudaDriver d;
  resolve(d.GetErrorName, "cuGetErrorName");
  resolve(d.GetErrorString, "cuGetErrorString");
  resolve(d.CtxGetCurrent, "cuCtxGetCurrent");
  resolve(d.CtxGetId, "cuCtxGetId");
  resolve(d.CtxGetDevice, "cuCtxGetDevice");
  resolve(d.CtxSynchronize, "cuCtxSynchronize");
  resolve(d.DeviceGetAttribute, "cuDeviceGetAttribute");
  resolve(d.ModuleLoadData, "cuModuleLoadData");
  resolve(d.ModuleGetFunction, "cuModuleGetFunction");
  resolve(d.ModuleUnload, "cuModuleUnload");
  resolve(d.LaunchKernel, "cuLaunchKernel");
  resolve(d.FuncGetAttribute, "cuFuncGetAttribute");
  resolve(d.FuncSetAttribute, "cuFuncSetAttribute");
  resolve(d.StreamSynchronize, "cuStreamSynchronize");
  resolve(d.MemsetD8Async, "cuMemsetD8Async");
  resolve(d.OccupancyMaxActiveBlocksPerMultiprocessor, "cuOccupancyMaxActiveBlocksPerMultiprocessor");
  return d;
}

}  // namespace

const CudaDriver& cuda_driver() {
  static const CudaDriver d = load();  // a throw leaves it uninitialised: the next call retries
  return d;
}

}  // namespace kforge
