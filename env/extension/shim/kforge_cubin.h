#pragma once
// kforge's header for the launchers the split writes (env/extension/split_launchers.h): the device
// half of a split .cu is a cubin linked into the candidate's library, beside a table of
// "kernel\0symbol\0" pairs ending with an empty name. Its kernels are looked up by name and
// launched with cudaLaunchKernel, which takes the kernel handle cudaLibraryGetKernel returns
// (CUDA 12.0+): the launch, its stream, its errors (cudaGetLastError) are the runtime's, as with
// <<<>>>, though a code may differ (a block of 2048 threads: cudaErrorInvalidValue here,
// cudaErrorInvalidConfiguration from <<<>>>, on the H100). A cubin that does not load, or a kernel
// not in it, leaves the handle null, and the launch then fails, which the caller's check sees.
#include <cuda_runtime.h>

#include <cstring>

namespace kforge_cubin {

inline cudaLibrary_t load(const unsigned char* image) {
  cudaLibrary_t library = nullptr;
  if (cudaLibraryLoadData(&library, image, nullptr, nullptr, 0, nullptr, nullptr, 0) != cudaSuccess) return nullptr;
  return library;
}

inline cudaKernel_t kernel(cudaLibrary_t library, const char* names, const char* name) {
  if (library == nullptr) return nullptr;
  for (const char* p = names; *p != '\0';) {
    const char* symbol = p + std::strlen(p) + 1;
    if (std::strcmp(p, name) == 0) {
      cudaKernel_t k = nullptr;
      return cudaLibraryGetKernel(&k, library, symbol) == cudaSuccess ? k : nullptr;
    }
    p = symbol + std::strlen(symbol) + 1;
  }
  return nullptr;
}

inline void launch(cudaKernel_t k, dim3 grid, dim3 block, void** args, size_t smem, cudaStream_t stream) {
  cudaLaunchKernel(reinterpret_cast<const void*>(k), grid, block, args, smem, stream);
}

}  // namespace kforge_cubin
