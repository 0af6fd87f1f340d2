// The split's launches on the GPU (env/extension/split_launchers.h, issue 28): a CUDA-Agent kernel
// file split into a cubin and its host code, whose kernels (static with a struct parameter, extern
// "C", without parameters) are launched from the cubin and compute what <<<>>> computed, and whose
// launch errors reach the caller's cudaGetLastError (with the code cudaLaunchKernel gives).
#include <dlfcn.h>
#include <unistd.h>

#include <filesystem>

#include <ATen/ATen.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <kforge_ext.h>

#include "configs/remove_tree.h"
#include "env/extension/extension_build.h"
#include "tests/skip_without_cuda.h"

using namespace kforge;
namespace fs = std::filesystem;

namespace {

const char* kOps = R"(#include <cuda_runtime.h>
struct Affine { float a, b; };
static __global__ void affine(const float* __restrict__ x, float* y, Affine p, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = p.a * x[i] + p.b;
}
extern "C" __global__ void fill_seven(float* y) { y[threadIdx.x] = 7.0f; }
__global__ void noop() {}
extern "C" int ops_affine(const float* x, float* y, float a, float b, int n, cudaStream_t s) {
  affine<<<(n + 255) / 256, 256, 0, s>>>(x, y, Affine{a, b}, n);
  noop<<<1, 1, 0, s>>>();
  return static_cast<int>(cudaGetLastError());
}
extern "C" int ops_fill(float* y, int threads, cudaStream_t s) {
  fill_seven<<<1, threads, 0, s>>>(y);
  return static_cast<int>(cudaGetLastError());
}
)";

const char* kBinding = R"(#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <c10/cuda/CUDAStream.h>
#include "../binding_registry.h"
extern "C" int ops_affine(const float* x, float* y, float a, float b, int n, cudaStream_t s);
extern "C" int ops_fill(float* y, int threads, cudaStream_t s);
static torch::Tensor affine_forward(torch::Tensor x, double a, double b) {
  auto y = torch::empty_like(x);
  const int e = ops_affine(x.data_ptr<float>(), y.data_ptr<float>(), static_cast<float>(a), static_cast<float>(b),
                           static_cast<int>(x.numel()), c10::cuda::getCurrentCUDAStream().stream());
  TORCH_CHECK(e == 0, "launch error ", e);
  return y;
}
static torch::Tensor fill_forward(torch::Tensor y, int64_t threads) {
  const int e = ops_fill(y.data_ptr<float>(), static_cast<int>(threads), c10::cuda::getCurrentCUDAStream().stream());
  return torch::full({1}, static_cast<float>(e));
}
static void register_ops(pybind11::module& m) {
  m.def("affine_forward", &affine_forward);
  m.def("fill_forward", &fill_forward);
}
REGISTER_BINDING(ops, register_ops);
)";

}  // namespace

TEST(SplitLaunchGpu, KernelsLaunchedFromTheCubinComputeAndReportErrorsAsTheLaunchDid) {
  KFORGE_SKIP_WITHOUT_CUDA();
  const std::string cache = (fs::temp_directory_path() / ("kforge-split-gpu-" + std::to_string(getpid()))).string();
  ExtensionBuilder builder(ExtensionToolchain::from_build(), cache);
  ExtensionBuildRequest req;
  req.files = {{"kernels/ops.cu", kOps}, {"kernels/ops_binding.cpp", kBinding}};
  const ExtensionBuildResult b = builder.build(req);
  ASSERT_TRUE(b.ok) << b.log;
  EXPECT_EQ(b.split.rfind("kernels/ops.cu split: 3 kernel(s) launched at 3 site(s)", 0), 0u) << b.split;
  for (const auto& s : b.steps) std::printf("  %-40s %-5s %8.0f ms%s\n", s.what.c_str(), s.tool.c_str(), s.ms, s.cached ? " (cached)" : "");
  void* lib = dlopen(b.library.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  auto entry = reinterpret_cast<std::vector<kforge_ext::Function>* (*)()>(dlsym(lib, "kforge_ext_functions"));
  ASSERT_NE(entry, nullptr);
  ASSERT_EQ(entry()->size(), 2u);
  const kforge_ext::Function& affine = (*entry())[0];
  const kforge_ext::Function& fill = (*entry())[1];

  const at::Tensor x = at::randn({1000}, at::TensorOptions().device(at::kCUDA));
  const at::Tensor y = affine.call({x, 2.0, 0.5})[0];
  EXPECT_TRUE(at::allclose(y, x * 2.0 + 0.5)) << "the static kernel with a struct parameter";

  at::Tensor z = at::zeros({64}, at::TensorOptions().device(at::kCUDA));
  EXPECT_EQ(fill.call({z, int64_t{32}})[0].item<float>(), 0.0f);
  EXPECT_EQ(z.slice(0, 0, 32).eq(7.0f).all().item<bool>(), true) << "the extern \"C\" kernel";
  EXPECT_EQ(z.slice(0, 32).eq(0.0f).all().item<bool>(), true);
  // 2048 threads in a block: an error the caller's own check sees. (<<<>>> reports it as
  // cudaErrorInvalidConfiguration; cudaLaunchKernel with a kernel handle, on the H100 in session 23,
  // as cudaErrorInvalidValue.)
  const float code = fill.call({z, int64_t{2048}})[0].item<float>();
  EXPECT_TRUE(code == static_cast<float>(cudaErrorInvalidConfiguration) || code == static_cast<float>(cudaErrorInvalidValue)) << code;
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // read and cleared by the candidate's own check
  dlclose(lib);
  remove_tree(cache);
}
