#pragma once
// CUDA events for the phases of one measurement, created checked and released however it ends.
#include <vector>

#include <cuda_runtime_api.h>

#include "env/cuda/cuda_check.h"

namespace kforge {

class CudaEvents {
 public:
  explicit CudaEvents(int n) : e_(static_cast<size_t>(n), nullptr) {
    for (auto& x : e_) KFORGE_CUDA(cudaEventCreate(&x));
  }
  ~CudaEvents() {
    for (auto& x : e_)
      if (x) cudaEventDestroy(x);
  }
  CudaEvents(const CudaEvents&) = delete;
  CudaEvents& operator=(const CudaEvents&) = delete;

  void record(int i, cudaStream_t st) { KFORGE_CUDA(cudaEventRecord(e_.at(i), st)); }
  void synchronize(int i) { KFORGE_CUDA(cudaEventSynchronize(e_.at(i))); }
  cudaEvent_t at(int i) const { return e_.at(i); }
  // Milliseconds between two recorded (and completed) events.
  double ms(int a, int b) const {
    float v = 0;
    KFORGE_CUDA(cudaEventElapsedTime(&v, e_.at(a), e_.at(b)));
    return v;
  }

 private:
  std::vector<cudaEvent_t> e_;
};

}  // namespace kforge
