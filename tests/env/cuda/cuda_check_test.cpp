// The one CUDA check (env/cuda/cuda_check.h): a failure names the call and CUDA's name and text for
// the error; whom it is blamed on decides what is thrown. Runs without a GPU or a driver: the
// runtime API's error names need neither.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "configs/error.h"
#include "env/cuda/cuda_check.h"
#include "env/judge/candidate_error.h"

namespace kforge {
namespace {

std::string runtime_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const CandidateError& e) {
    return std::string("a CandidateError: ") + e.what();
  } catch (const Error& e) {
    return e.kind() == ErrorKind::runtime ? e.what() : std::string("wrong kind: ") + e.what();
  }
  return "nothing thrown";
}

cudaError_t fails_with_invalid_value() { return cudaErrorInvalidValue; }

TEST(CudaCheck, SuccessThrowsNothing) {
  EXPECT_NO_THROW(cuda_check(cudaSuccess, "cudaMemcpyAsync"));
  EXPECT_NO_THROW(cuda_check(CUDA_SUCCESS, "cuLaunchKernel", CudaBlame::candidate_launch));
}

TEST(CudaCheck, KforgesOwnFailureIsARuntimeErrorNamingTheCallAndTheError) {
  EXPECT_EQ(runtime_error_of([] { cuda_check(cudaErrorMemoryAllocation, "L2 flush"); }),
            "L2 flush: cudaErrorMemoryAllocation (2): out of memory");
  EXPECT_EQ(cuda_error_text(cudaErrorInvalidValue), "cudaErrorInvalidValue (1): invalid argument");
}

TEST(CudaCheck, TheMacroNamesTheCallByItsSourceTextAndLine) {
  std::string what = runtime_error_of([] { KFORGE_CUDA(fails_with_invalid_value()); });
  // Without a driver, asking whether the context is lost is itself the runtime error.
  if (what.find("CUDA driver") != std::string::npos) GTEST_SKIP() << what;
  EXPECT_EQ(what.rfind("fails_with_invalid_value() at ", 0), 0u) << what;
  EXPECT_NE(what.find("cuda_check_test.cpp:"), std::string::npos) << what;
  EXPECT_NE(what.find(": cudaErrorInvalidValue (1): invalid argument"), std::string::npos) << what;
}

}  // namespace
}  // namespace kforge
