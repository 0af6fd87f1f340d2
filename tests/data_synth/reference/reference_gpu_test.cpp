// The reference on a CUDA device: same draws byte for byte as on the CPU, and the same function
// (within the task's tolerance) for every operator and every sample. Skipped without a GPU.
#include "data_synth/reference/reference.h"

#include <cstdlib>
#include <filesystem>

#include <gtest/gtest.h>

#include "tests/test_paths.h"

#include "tests/skip_without_cuda.h"

using namespace kforge;
using kforge::testing::source_dir;
namespace fs = std::filesystem;

namespace {

void expect_close(const at::Tensor& gpu, const at::Tensor& cpu, const Tolerance& tol, const std::string& what) {
  at::Tensor g = gpu.cpu().to(at::kDouble), c = cpu.to(at::kDouble);
  at::Tensor bad = (g - c).abs() > (tol.atol + tol.rtol * c.abs());
  int64_t mismatches = bad.sum().item<int64_t>();
  EXPECT_EQ(mismatches, 0) << what << ": " << mismatches << " of " << c.numel() << " elements outside tolerance; max abs error "
                           << (g - c).abs().max().item<double>();
}

}  // namespace

TEST(ReferenceGpu, DrawsAreTheSameBytesOnCpuAndGpu) {
  KFORGE_SKIP_WITHOUT_CUDA();
  for (DType dt : {DType::float32, DType::float16, DType::bfloat16, DType::int64}) {
    Draw d = dtype_is_float(dt) ? Draw::normal(0, 1) : Draw::randint(-5, 5);
    at::Tensor c = draw_tensor(d, {{257, 1031}, dt}, 99, at::kCPU);
    at::Tensor g = draw_tensor(d, {{257, 1031}, dt}, 99, at::Device(at::kCUDA, 0));
    EXPECT_TRUE(g.is_cuda());
    EXPECT_TRUE(at::equal(c, g.cpu())) << dtype_name(dt);
  }
}

TEST(ReferenceGpu, EveryOperatorAgreesWithTheCpuReference) {
  KFORGE_SKIP_WITHOUT_CUDA();
  apply_reference_precision();
  for (const auto& op : op_registry().all()) {
    TaskSpec t = make_op_example_task(op);
    auto oc = run_reference(t, draw_arguments(t, {t.seed, 0, 0}, at::kCPU));
    auto og = run_reference(t, draw_arguments(t, {t.seed, 0, 0}, at::Device(at::kCUDA, 0)));
    expect_close(og[0], oc[0], t.tolerance, op.name);
  }
}

TEST(ReferenceGpu, EverySampleAgreesWithTheCpuReferenceAtCheckDims) {
  KFORGE_SKIP_WITHOUT_CUDA();
  apply_reference_precision();
  for (const auto& e : fs::directory_iterator(source_dir() + "/datasets/samples")) {
    if (e.path().extension() != ".yaml") continue;
    TaskSpec t = load_task(e.path().string()).at_check_dims();
    for (uint64_t trial : {0, 1}) {
      auto oc = run_reference(t, draw_arguments(t, {t.seed, trial, 3}, at::kCPU));
      auto og = run_reference(t, draw_arguments(t, {t.seed, trial, 3}, at::Device(at::kCUDA, 0)));
      for (size_t i = 0; i < oc.size(); ++i) expect_close(og[i], oc[i], t.tolerance, t.id + "/" + t.outputs[i].name);
    }
  }
}

TEST(ReferenceGpu, Float32ReferencesRunWithTf32Off) {
  KFORGE_SKIP_WITHOUT_CUDA();
  auto flags = apply_reference_precision();
  EXPECT_EQ(flags["allow_tf32_cublas"], "false");
  EXPECT_EQ(flags["allow_tf32_cudnn"], "false");
  // A float32 matmul of size 1024 with TF32 off matches float64 to ~1e-5 relative; TF32 would give ~1e-3.
  at::Tensor a = draw_tensor(Draw::normal(0, 1), {{1024, 1024}, DType::float32}, 1, at::Device(at::kCUDA, 0));
  at::Tensor b = draw_tensor(Draw::normal(0, 1), {{1024, 1024}, DType::float32}, 2, at::Device(at::kCUDA, 0));
  at::Tensor exact = at::matmul(a.to(at::kDouble), b.to(at::kDouble));
  double rel = ((at::matmul(a, b).to(at::kDouble) - exact).norm() / exact.norm()).item<double>();
  EXPECT_LT(rel, 1e-5);
}
