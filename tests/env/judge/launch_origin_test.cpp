// Which code launched each kernel (env/judge/launch_origin.h), without a GPU: how a launching
// object is named, how kernels are joined to their launches and judged against the allowed
// libraries, and the thread count the host_threads check reads. The stack attribution itself runs
// under CUPTI on the GPU (tests/env/extension/extension_eval_gpu_test.cpp).
#include <atomic>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "env/judge/launch_origin.h"

using namespace kforge;

namespace {

KernelRecord kernel(const std::string& name, uint32_t correlation) {
  KernelRecord k;
  k.name = name;
  k.correlation_id = correlation;
  return k;
}

LaunchRecord launch(uint32_t correlation, LaunchOrigin origin, const std::string& object = "") {
  LaunchRecord l;
  l.correlation_id = correlation;
  l.origin = origin;
  l.object = object;
  return l;
}

}  // namespace

TEST(LaunchOrigin, ObjectsAreNamedByTheLibraryThatHoldsTheCode) {
  const std::string lib = "/venv/lib/python3.11/site-packages/";
  EXPECT_EQ(origin_of_object(lib + "torch/lib/libtorch_cuda.so", false, false), LaunchOrigin::aten);
  EXPECT_EQ(origin_of_object(lib + "torch/lib/libc10_cuda.so", false, false), LaunchOrigin::aten);
  EXPECT_EQ(origin_of_object(lib + "nvidia/cublas/lib/libcublasLt.so.13", false, false), LaunchOrigin::cublas);
  EXPECT_EQ(origin_of_object(lib + "nvidia/cublas/lib/libcublas.so.13", false, false), LaunchOrigin::cublas);
  EXPECT_EQ(origin_of_object(lib + "nvidia/cudnn/lib/libcudnn_engines_precompiled.so.9", false, false), LaunchOrigin::cudnn);
  EXPECT_EQ(origin_of_object("/usr/lib/x86_64-linux-gnu/libcufft.so.12", false, false), LaunchOrigin::other_library);
  // A candidate's library is loaded from a memory file: what decides is that it was registered, not its name.
  EXPECT_EQ(origin_of_object("/proc/self/fd/7", true, false), LaunchOrigin::candidate);
  EXPECT_EQ(origin_of_object("/proc/self/fd/7", false, false), LaunchOrigin::other_library);
  EXPECT_EQ(origin_of_object("libtorch_cuda.so", true, false), LaunchOrigin::candidate);
  EXPECT_EQ(origin_of_object("/work/build/env/kforge-worker", false, true), LaunchOrigin::harness);
}

TEST(LaunchOrigin, CudaPlumbingIsSkippedOnTheWayToTheLauncher) {
  for (const char* p : {"/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/usr/local/cuda/lib64/libcupti.so.13", "/venv/nvidia/libcudart.so.13",
                        "/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2", "/lib/x86_64-linux-gnu/libgcc_s.so.1"})
    EXPECT_TRUE(is_cuda_plumbing(p)) << p;
  for (const char* p : {"/venv/torch/lib/libtorch_cuda.so", "/venv/nvidia/libcublasLt.so.13", "/proc/self/fd/9", "libcudnn.so.9",
                        "/usr/lib/libcudadebugger.so.1"})
    EXPECT_FALSE(is_cuda_plumbing(p)) << p;
}

TEST(LaunchOrigin, KernelsOfTheCandidateAndTheHarnessPass) {
  const std::vector<KernelRecord> ks = {kernel("draw", 1), kernel("linear_relu_kernel", 2), kernel("linear_relu_kernel", 4),
                                        kernel("reference_gemm", 3)};
  const std::vector<LaunchRecord> ls = {launch(1, LaunchOrigin::harness), launch(2, LaunchOrigin::candidate, "fd/7"),
                                        launch(3, LaunchOrigin::harness), launch(4, LaunchOrigin::candidate, "fd/7")};
  const OriginVerdict v = judge_kernel_origins(ks, ls, {});
  EXPECT_TRUE(v.ok) << v.evidence.dump();
  EXPECT_EQ(v.evidence["kernels_by_origin"]["candidate"], 2);
  EXPECT_FALSE(v.evidence["kernels_by_origin"].contains("harness"));
  EXPECT_EQ(v.evidence["kernel_names"]["candidate"]["linear_relu_kernel"], 2);
  EXPECT_EQ(v.evidence["refused_kernels"], 0);
}

TEST(LaunchOrigin, LibraryKernelsPassOnlyWhereAllowed) {
  const std::vector<KernelRecord> ks = {kernel("sm90_xmma_gemm_f32f32", 5), kernel("at::native::vectorized_elementwise_kernel", 6)};
  const std::vector<LaunchRecord> ls = {launch(5, LaunchOrigin::cublas, "libcublasLt.so.13"),
                                        launch(6, LaunchOrigin::aten, "libtorch_cuda.so")};
  const OriginVerdict none = judge_kernel_origins(ks, ls, {});
  EXPECT_FALSE(none.ok);
  EXPECT_EQ(none.evidence["refused_kernels"], 2);
  EXPECT_EQ(none.evidence["launching_objects"]["cublas"][0], "libcublasLt.so.13");
  const OriginVerdict cublas_only = judge_kernel_origins(ks, ls, {"cublas"});
  EXPECT_FALSE(cublas_only.ok);
  EXPECT_EQ(cublas_only.evidence["refused_kernels"], 1);
  EXPECT_TRUE(judge_kernel_origins(ks, ls, {"cublas", "aten"}).ok);
}

TEST(LaunchOrigin, OtherThreadsOtherLibrariesAndUnseenLaunchesAlwaysFail) {
  const std::vector<std::string> all = {"aten", "cublas", "cudnn"};
  for (LaunchOrigin o : {LaunchOrigin::other_thread, LaunchOrigin::other_library, LaunchOrigin::unknown}) {
    const OriginVerdict v = judge_kernel_origins({kernel("k", 8)}, {launch(8, o)}, all);
    EXPECT_FALSE(v.ok) << launch_origin_name(o);
    EXPECT_EQ(v.evidence["kernels_by_origin"][launch_origin_name(o)], 1);
  }
  const OriginVerdict unseen = judge_kernel_origins({kernel("k", 9)}, {launch(8, LaunchOrigin::candidate)}, all);
  EXPECT_FALSE(unseen.ok);
  EXPECT_EQ(unseen.evidence["kernels_by_origin"]["unattributed"], 1);
}

TEST(LaunchOrigin, TheThreadCountSeesAThreadWhileItRuns) {
  const int before = process_thread_count();
  ASSERT_GT(before, 0);
  std::atomic<bool> stop{false};
  std::thread t([&] {
    while (!stop) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  EXPECT_EQ(process_thread_count(), before + 1);
  stop = true;
  t.join();
  EXPECT_EQ(process_thread_count(), before);
}
