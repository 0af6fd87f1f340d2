#pragma once
// One CUDA check. Every CUDA result kforge looks at, from the driver API (CUresult) or the runtime
// API (cudaError_t), goes through cuda_check, which on failure throws an error that names the call
// that failed and CUDA's name and text for the error:
//   "loading the compiled module: CUDA_ERROR_INVALID_IMAGE (200): device kernel image is invalid"
// A runtime API error is cleared first (cudaGetLastError), so the next call is not blamed for it.
// What is thrown says whom the failure is blamed on (CudaBlame):
//   kforge                 kforge's own call: a runtime Error (configs/error.h).
//   kforge_unless_sticky   a harness call in a context where a candidate's kernels run: a runtime
//                          Error, but when the context is lost (a sticky error, which only a
//                          kernel causes) a fatal CandidateError of kind runtime_error, after
//                          which the GPU worker replies and exits.
//   candidate_launch,      the candidate's own load, launch or run: a CandidateError of kind
//   candidate_run          launch_error or runtime_error; fatal, of kind runtime_error, when sticky.
// KFORGE_CUDA(call) checks a harness call (kforge_unless_sticky) and names it by its source text
// and file:line, as NVBench's cuda_call.cuh does.
#include <string>
#include <string_view>

#include <cuda.h>
#include <driver_types.h>

namespace kforge {

enum class CudaBlame { kforge, kforge_unless_sticky, candidate_launch, candidate_run };

// Throws as above unless r is CUDA_SUCCESS / cudaSuccess.
void cuda_check(CUresult r, std::string_view call, CudaBlame blame = CudaBlame::kforge);
void cuda_check(cudaError_t r, std::string_view call, CudaBlame blame = CudaBlame::kforge);

// "CUDA_ERROR_ILLEGAL_ADDRESS (700): an illegal memory access was encountered"
std::string cuda_error_text(CUresult r);
// "cudaErrorIllegalAddress (700): an illegal memory access was encountered"
std::string cuda_error_text(cudaError_t r);

// Errors after which the context is unusable ("sticky"): the worker must exit.
bool is_sticky(CUresult r);

#define KFORGE_CUDA_STR2_(x) #x
#define KFORGE_CUDA_STR_(x) KFORGE_CUDA_STR2_(x)
#define KFORGE_CUDA(call) \
  ::kforge::cuda_check((call), #call " at " __FILE__ ":" KFORGE_CUDA_STR_(__LINE__), ::kforge::CudaBlame::kforge_unless_sticky)

}  // namespace kforge
