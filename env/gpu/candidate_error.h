#pragma once
// How the GPU worker's stages fail: a CandidateError carries the reply's error kind (worker_protocol.h)
// and whether the CUDA context is lost (fatal: the worker exits after replying). One macro checks
// every harness CUDA call (KFORGE_CU / KFORGE_CUDART) and adds file:line.
#include <stdexcept>
#include <string>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "env/process/worker_protocol.h"

namespace kforge {

struct CandidateError : std::runtime_error {
  std::string kind;
  bool fatal;
  CandidateError(std::string k, const std::string& msg, bool f) : std::runtime_error(msg), kind(std::move(k)), fatal(f) {}
};

// Errors after which the context is unusable ("sticky"): the worker must exit.
bool is_sticky(CUresult r);
// A candidate's failure: fatal when sticky, else of kind `non_sticky_kind`.
[[noreturn]] void fail_cu(CUresult r, const std::string& what, const char* non_sticky_kind);
// A harness call's failure (driver API): a candidate error when sticky (the candidate broke the
// context), else a runtime error of the harness.
void check_harness_cu(CUresult r, const char* what);
// The same for runtime API calls.
void check_harness_cudart(cudaError_t r, const char* what);

#define KFORGE_STR2_(x) #x
#define KFORGE_STR_(x) KFORGE_STR2_(x)
#define KFORGE_CU(call) ::kforge::check_harness_cu((call), #call " at " __FILE__ ":" KFORGE_STR_(__LINE__))
#define KFORGE_CUDART(call) ::kforge::check_harness_cudart((call), #call " at " __FILE__ ":" KFORGE_STR_(__LINE__))

}  // namespace kforge
