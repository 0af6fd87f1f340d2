// The tolerance rule's edge cases (tolerance_edge_cases.h) on a GPU: the fused device compare, the
// slow compare on CUDA tensors (libtorch's CUDA arithmetic) and the host copy of the device code
// give the same counts and maxima. Skipped (KFORGE_SKIPPED) without a GPU.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include "env/judge/check_kernel.h"
#include "env/judge/output_compare.h"
#include "tests/env/judge/tolerance_edge_cases.h"
#include "tests/skip_without_cuda.h"
#include "tests/support/device_arch.h"

using namespace kforge;
using namespace kforge::testing;

namespace {

CUdeviceptr ptr(const at::Tensor& t) { return reinterpret_cast<CUdeviceptr>(t.data_ptr()); }

}  // namespace

TEST(ToleranceAgreementGpu, DeviceSlowCompareAndHostCopyCountEdgeCasesAlike) {
  KFORGE_SKIP_WITHOUT_CUDA();
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  ASSERT_EQ(cudaFree(nullptr), cudaSuccess);  // the primary context, current in this thread (libtorch's too)
  DeviceChecker checker(device_arch());
  for (DType t : kFloatTypes) {
    const uint64_t poison = poison_bits_for_trial(t, kPoisonId);
    for (const Tolerance& tol : tolerances(t)) {
      EdgePairs p = pairs_for(t, tol);
      const int64_t n = p.cand.numel();
      CompareStats host = compare_like_device(t, p.cand.data_ptr(), p.ref.data_ptr(), n, tol.atol, tol.rtol, poison);
      at::Tensor cand = p.cand.cuda(), ref = p.ref.cuda();
      at::Tensor words = at::zeros({DeviceChecker::kCompareWords}, at::TensorOptions(at::kLong).device(at::kCUDA));
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      checker.compare(t, ptr(cand), ptr(ref), n, tol.atol, tol.rtol, poison, ptr(words), nullptr);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      at::Tensor w = words.cpu();
      CompareStats device = CompareStats::from_words(reinterpret_cast<const uint64_t*>(w.data_ptr<int64_t>()));
      Json slow = compare_output("y", cand.view(scalar_of(t)), ref.view(scalar_of(t)), t, tol, 0, kPoisonId);
      for (const CompareStats* s : {&device, &host}) {
        EXPECT_EQ(slow["mismatches"].get<uint64_t>(), s->mismatches) << dtype_name(t);
        EXPECT_EQ(slow["unwritten"].get<uint64_t>(), s->unwritten) << dtype_name(t);
        EXPECT_EQ(slow["max_abs_error"].get<double>(), s->max_abs) << dtype_name(t);
        EXPECT_EQ(slow["max_rel_error"].get<double>(), s->max_rel) << dtype_name(t);
      }
    }
  }
}
