// The GPU worker's speed-of-light stage (gpu_time.cpp) on a real device: an honest candidate's
// timed median is checked against the floor of its task (minimum bytes over the measured copy
// bandwidth, FLOPs over the measured matmul peak, each ceiling x the headroom), reported with its
// evidence, and passes; switched off, the check is not run. The exploit corpus has no candidate
// the floor refuses (a kernel cannot beat the hardware), so this is the stage's own test.
#include "env/judge/evaluator.h"

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
  return ev.evaluate(task, Candidate::load(root + "/datasets/samples/candidates/gelu_scale_residual/fused"), opt);
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
