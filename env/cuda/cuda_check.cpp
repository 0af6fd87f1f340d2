#include "env/cuda/cuda_check.h"

#include <cuda_runtime_api.h>

#include "configs/error.h"
#include "env/cuda/cuda_driver.h"
#include "env/judge/candidate_error.h"

namespace kforge {

namespace {

[[noreturn]] void fail(std::string_view call, const std::string& text, CudaBlame blame, bool sticky) {
  std::string message = std::string(call) + ": " + text;
  if (sticky) throw CandidateError(worker_error::runtime_error, message, true);
  switch (blame) {
    case CudaBlame::candidate_launch:
      throw CandidateError(worker_error::launch_error, message, false);
    case CudaBlame::candidate_run:
      throw CandidateError(worker_error::runtime_error, message, false);
    case CudaBlame::kforge:
    case CudaBlame::kforge_unless_sticky:
      break;
  }
  throw_error(ErrorKind::runtime, message);
}

}  // namespace

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

std::string cuda_error_text(CUresult r) {
  const char* name = nullptr;
  const char* text = nullptr;
  const CudaDriver& d = cuda_driver();
  if (d.GetErrorName(r, &name) != CUDA_SUCCESS || !name) name = "CUDA error";
  if (d.GetErrorString(r, &text) != CUDA_SUCCESS || !text) text = "";
  return std::string(name) + " (" + std::to_string(static_cast<int>(r)) + "): " + text;
}

std::string cuda_error_text(cudaError_t r) {
  return std::string(cudaGetErrorName(r)) + " (" + std::to_string(static_cast<int>(r)) + "): " + cudaGetErrorString(r);
}

void cuda_check(CUresult r, std::string_view call, CudaBlame blame) {
  if (r == CUDA_SUCCESS) return;
  fail(call, cuda_error_text(r), blame, blame != CudaBlame::kforge && is_sticky(r));
}

void cuda_check(cudaError_t r, std::string_view call, CudaBlame blame) {
  if (r == cudaSuccess) return;
  cudaGetLastError();  // clear a non-sticky error so the next call does not see it
  // The runtime's error codes do not say whether the context is lost; the driver's synchronisation does.
  bool sticky = blame != CudaBlame::kforge && is_sticky(cuda_driver().CtxSynchronize());
  fail(call, cuda_error_text(r), blame, sticky);
}

}  // namespace kforge
