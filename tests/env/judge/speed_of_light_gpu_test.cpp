// The GPU worker's speed-of-light stage (gpu_time.cpp) on a real device: an honest candidate's
// timed median is checked against the floor of its task (minimum bytes over the measured copy
// bandwidth, FLOPs over the measured peak of the task's precision, each ceiling x the headroom),
// reported with its evidence, and passes; switched off, the check is not run. The exploit corpus
// has no candidate the floor refuses (a kernel cannot beat the hardware), so this is the stage's
// own test.
#include "env/evaluator/evaluator.h"
#include "tests/env/evaluator/report_json.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "tests/skip_without_cuda.h"
#include "tests/test_paths.h"

using namespace kforge;

namespace {

EvalConfig quick_config() {
  EvalConfig c;
  c.worker.compile_timeout_s = 30;
  c.worker.request_timeout_s = 120;
  c.timing.budget_ms = 1000;
  return c;
}

const Json* find_check(const Json& report, const std::string& name) {
  for (const auto& c : report["anticheat"]["checks"])
    if (c["name"] == name) return &c;
  return nullptr;
}

Json judge(Evaluator& ev) {
  const std::string root = kforge::testing::source_dir();
  TaskSpec task = load_task(root + "/datasets/samples/gelu_scale_residual.yaml");
  EvalOptions opt;
  opt.trials = 1;
  opt.time = true;
  return to_json(ev.evaluate(task, Candidate::load(root + "/datasets/samples/candidates/gelu_scale_residual/fused"), opt));
}

}  // namespace

TEST(SpeedOfLightGpu, AnHonestCandidateIsAboveItsFloorWithTheEvidenceReported) {
  KFORGE_SKIP_WITHOUT_CUDA();
  Evaluator ev(quick_config());
  Json r = judge(ev);
  ASSERT_EQ(report_verdict(r), "pass") << format_report(r);
  const Json* sol = find_check(r, "speed_of_light");
  ASSERT_NE(sol, nullptr) << format_report(r);
  EXPECT_TRUE((*sol)["passed"].get<bool>()) << sol->dump();
  const Json& e = (*sol)["evidence"];
  const double floor_ms = e["floor_ms"].get<double>(), median_ms = e["median_ms"].get<double>();
  EXPECT_GT(floor_ms, 0.0) << e.dump();
  EXPECT_GE(median_ms, floor_ms) << e.dump();
  EXPECT_DOUBLE_EQ(floor_ms, std::max(e["bytes_floor_ms"].get<double>(), e["flops_floor_ms"].get<double>())) << e.dump();
  EXPECT_GT(e["copy_gbps"].get<double>(), 100.0) << e.dump();  // any datacenter GPU copies faster
  EXPECT_DOUBLE_EQ(median_ms, r["timing"]["candidate"]["median_ms"].get<double>());
  EXPECT_EQ(e["headroom"].get<double>(), ev.anticheat().dynamic.sol_headroom);
  // A float32 task at tolerance 1e-4: the float32 contract's peak, from the measured ceilings
  // (anticheat/dynamic_checks.h, MathPrecision). TF32 really ran on tensor cores for its measurement.
  EXPECT_EQ(e["precision"], "float32") << e.dump();
  const double fp32 = e["matmul_tflops_fp32"].get<double>(), tf32 = e["matmul_tflops_tf32"].get<double>(),
               fp16 = e["matmul_tflops_fp16"].get<double>();
  EXPECT_GT(tf32, 2.0 * fp32) << e.dump();
  EXPECT_DOUBLE_EQ(e["peak_tflops"].get<double>(), std::max({fp32, tf32 / 3.0, fp16 / 3.0})) << e.dump();
}

TEST(SpeedOfLightGpu, SwitchedOffTheCheckIsNotRun) {
  KFORGE_SKIP_WITHOUT_CUDA();
  Evaluator ev(quick_config());
  AnticheatConfig ac = ev.anticheat();
  ac.dynamic.speed_of_light = false;
  ev.set_anticheat(ac);
  Json r = judge(ev);
  ASSERT_EQ(report_verdict(r), "pass") << format_report(r);
  EXPECT_EQ(find_check(r, "speed_of_light"), nullptr) << format_report(r);
}
