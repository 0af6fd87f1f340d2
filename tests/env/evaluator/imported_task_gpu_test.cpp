// Imported tasks (TorchScript references) judged on the GPU end to end: the worker loads the
// artifact on the device, verifies a correct candidate and fails a wrong one, times against the
// TorchScript reference, and turns the speed-of-light check off (saying so) for a task that
// states no FLOP count. Tasks from tests/data_synth/make_imported_tasks.py.
#include <gtest/gtest.h>

#include "env/evaluator/evaluator.h"
#include "tests/env/evaluator/report_json.h"
#include "tests/skip_without_cuda.h"

using namespace kforge;

namespace {

TaskSpec fixture(const std::string& id) { return load_task(std::string(KFORGE_IMPORTED_FIXTURE_DIR) + "/tasks/" + id + ".yaml"); }

EvalConfig test_config() {
  EvalConfig c;
  c.worker.compile_timeout_s = 10;
  c.worker.request_timeout_s = 60;
  c.timing.budget_ms = 1500;
  return c;
}

Candidate relu_candidate(bool correct) {
  Candidate c;
  c.dir = correct ? "relu" : "identity";
  c.source = std::string(
                 "extern \"C\" __global__ void k(const float* x, float* y, int n) {\n"
                 "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                 "  if (i < n) y[i] = ") +
             (correct ? "fmaxf(x[i], 0.0f)" : "x[i]") + ";\n}\n";
  c.plan_text = "launches:\n  - kernel: k\n    grid: [16]\n    block: [256]\n    args: [x0, y0, 4096]\n";
  return c;
}

// y0 = (a + b) * 2 (8 x 32), y1 = its row mean / 2: one block of 32 threads per row.
Candidate two_outputs_candidate() {
  Candidate c;
  c.dir = "two_outputs";
  c.source =
      "extern \"C\" __global__ void k(const float* a, const float* b, float* y0, float* y1) {\n"
      "  int r = blockIdx.x, j = threadIdx.x;\n"
      "  float s = a[r * 32 + j] + b[r * 32 + j];\n"
      "  y0[r * 32 + j] = s * 2.0f;\n"
      "  for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);\n"
      "  if (j == 0) y1[r] = s / 32.0f;\n"
      "}\n";
  c.plan_text = "launches:\n  - kernel: k\n    grid: [8]\n    block: [32]\n    args: [x0, x1, y0, y1]\n";
  return c;
}

}  // namespace

TEST(ImportedTaskGpu, CorrectCandidatePassesAndWrongOneFails) {
  KFORGE_SKIP_WITHOUT_CUDA();
  Evaluator ev(test_config());
  TaskSpec task = fixture("kb_l1_relu");
  EvalOptions opt;
  opt.trials = 3;
  opt.salt = 4242;
  Json good = to_json(ev.evaluate(task, relu_candidate(true), opt));
  EXPECT_EQ(report_verdict(good), "pass") << format_report(good);
  ASSERT_TRUE(good["timing"].is_object()) << good.dump();
  EXPECT_GT(good["timing"]["reference"]["median_ms"].get<double>(), 0);
  opt.time = false;
  Json bad = to_json(ev.evaluate(task, relu_candidate(false), opt));
  EXPECT_EQ(report_verdict(bad), "fail") << format_report(bad);
}

TEST(ImportedTaskGpu, SpeedOfLightIsOffAndSaysSoWithoutAFlopCount) {
  KFORGE_SKIP_WITHOUT_CUDA();
  Evaluator ev(test_config());
  TaskSpec task = fixture("kb_l1_two_outputs");
  ASSERT_FALSE(task.cost.flops.has_value());
  EvalOptions opt;
  opt.trials = 3;
  Json r = to_json(ev.evaluate(task, two_outputs_candidate(), opt));
  EXPECT_EQ(report_verdict(r), "pass") << format_report(r);
  ASSERT_TRUE(r["timing"].is_object()) << r.dump();
  EXPECT_TRUE(r["timing"]["checks_off"]["speed_of_light"].is_string()) << r["timing"].dump();
  for (const auto& c : r["anticheat"]["checks"]) EXPECT_NE(c["name"], "speed_of_light") << c.dump();
}

namespace {

// Batchnorm in eval mode (8 x 64 x ... over 32 features): `y` is the kernel's expression for y[i].
Candidate batchnorm_candidate(const std::string& name, const std::string& y) {
  Candidate c;
  c.dir = name;
  c.source =
      "extern \"C\" __global__ void k(const float* x, const float* w, const float* b, const float* m, const float* v,\n"
      "                              float* y, int n, int f) {\n"
      "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
      "  if (i < n) { int j = i % f; y[i] = " +
      y +
      "; }\n"
      "}\n";
  c.plan_text =
      "launches:\n  - kernel: k\n    grid: [2]\n    block: [256]\n"
      "    args: [x0, bn.weight, bn.bias, bn.running_mean, bn.running_var, y0, 512, 32]\n";
  return c;
}

}  // namespace

TEST(ImportedTaskGpu, ModulesWithStateVerifyWithTheirDrawnParameters) {
  KFORGE_SKIP_WITHOUT_CUDA();
  Evaluator ev(test_config());
  TaskSpec task = fixture("kb_l2_batchnorm_eval");
  EvalOptions opt;
  opt.trials = 3;
  opt.time = false;
  Json r = to_json(ev.evaluate(task, batchnorm_candidate("bn", "(x[i] - m[j]) * rsqrtf(v[j] + 1e-5f) * w[j] + b[j]"), opt));
  EXPECT_EQ(report_verdict(r), "pass") << format_report(r);
}

// The module's initial state is weight 1, bias 0, mean 0, variance 1; every one of those varies
// between trials (a constant float argument is refused by the parser), so a kernel that assumes
// the initial state instead of reading it fails, as does one that ignores any one of them.
TEST(ImportedTaskGpu, AKernelThatAssumesTheModulesInitialStateFails) {
  KFORGE_SKIP_WITHOUT_CUDA();
  Evaluator ev(test_config());
  TaskSpec task = fixture("kb_l2_batchnorm_eval");
  for (const auto& a : task.arguments)
    if (a.decl.meta.dtype == DType::float32) {
      EXPECT_NE(a.draw.dist, DrawDist::constant) << a.decl.name;
    }
  EvalOptions opt;
  opt.trials = 3;
  opt.time = false;
  const std::pair<const char*, const char*> shortcuts[] = {{"initial_state", "x[i] * rsqrtf(1.0f + 1e-5f)"},
                                                           {"no_weight", "(x[i] - m[j]) * rsqrtf(v[j] + 1e-5f) + b[j]"},
                                                           {"no_bias", "(x[i] - m[j]) * rsqrtf(v[j] + 1e-5f) * w[j]"},
                                                           {"no_mean", "x[i] * rsqrtf(v[j] + 1e-5f) * w[j] + b[j]"},
                                                           {"no_variance", "(x[i] - m[j]) * rsqrtf(1.0f + 1e-5f) * w[j] + b[j]"}};
  for (const auto& [name, y] : shortcuts) {
    Json r = to_json(ev.evaluate(task, batchnorm_candidate(name, y), opt));
    EXPECT_EQ(report_verdict(r), "fail") << name << "\n" << format_report(r);
  }
}
