#include "env/gpu/candidate_error.h"

#include "configs/error.h"
#include "env/gpu/cuda_driver.h"

namespace kforge {

bool is_sticky(CUresult r) {
  switch (r) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
      return true;
    default:
      return false;
  }
}

[[noreturn]] void fail_cu(CUresult r, const std::string& what, const char* non_sticky_kind) {
  if (is_sticky(r)) throw CandidateError(worker_error::runtime_error, what + ": " + cu_error_text(r), true);
  throw CandidateError(non_sticky_kind, what + ": " + cu_error_text(r), false);
}

void check_harness_cu(CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return;
  if (is_sticky(r)) throw CandidateError(worker_error::runtime_error, std::string(what) + ": " + cu_error_text(r), true);
  KFORGE_FAIL(runtime, what << ": " << cu_error_text(r));
}

void check_harness_cudart(cudaError_t r, const char* what) {
  if (r == cudaSuccess) return;
  cudaGetLastError();  // clear a non-sticky error so the next call does not see it
  CUresult d = cuda_driver().CtxSynchronize();
  if (is_sticky(d)) throw CandidateError(worker_error::runtime_error, std::string(what) + ": " + cudaGetErrorString(r), true);
  KFORGE_FAIL(runtime, what << ": " << cudaGetErrorString(r));
}

}  // namespace kforge
