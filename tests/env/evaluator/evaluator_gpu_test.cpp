// Every shipped candidate judged on the GPU gets its expected verdict; after every faulting
// candidate the next request (a correct candidate) succeeds in the same evaluator.
#include "env/evaluator/evaluator.h"
#include "tests/env/evaluator/report_json.h"

#include <iostream>
#include <optional>

#include <gtest/gtest.h>

#include "tests/env/evaluator/candidates.h"
#include "tests/skip_without_cuda.h"

using namespace kforge;
using namespace kforge::testing;

namespace {

EvalConfig test_config() {
  EvalConfig c;
  c.worker.compile_timeout_s = 10;
  c.worker.request_timeout_s = 30;
  c.timing.budget_ms = 1500;
  return c;
}

std::string expected_verdict(const ShippedCandidate& c) {
  if (c.verdict == "pass") return "pass";
  if (c.verdict == "wrong") return "fail";
  return "error";
}

// One verification trial, no timing, a profile with hardware counters.
EvalOptions counters_options() {
  EvalOptions opt;
  opt.trials = 1;
  opt.time = false;
  opt.profile = true;
  opt.counters = true;
  return opt;
}

// The harness's verification work split by stage (EVAL_REPORT.md, phases): every stage reported,
// the draw and the fingerprints take time, and the stages lie inside the harness's own spans.
void expect_harness_split(const Json& phases) {
  ASSERT_GE(phases.value("verify_calls", 0.0), 1.0) << phases.dump();
  double sum = 0;
  for (const char* k : {"draw", "member", "fingerprint", "poison", "reference_copy", "compare"}) {
    const std::string key = std::string("verify_harness_") + k + "_ms";
    ASSERT_TRUE(phases.contains(key)) << key;
    EXPECT_GE(phases[key].get<double>(), 0.0) << key;
    sum += phases[key].get<double>();
  }
  EXPECT_GT(phases["verify_harness_draw_ms"].get<double>(), 0.0);
  EXPECT_GT(phases["verify_harness_fingerprint_ms"].get<double>(), 0.0);
  EXPECT_LE(sum, phases["verify_harness_gpu_ms"].get<double>() * 1.01 + 0.01) << phases.dump();
}

}  // namespace

TEST(EvaluatorGpu, EveryShippedCandidateGetsItsVerdict) {
  KFORGE_SKIP_WITHOUT_CUDA();
  Evaluator ev(test_config());
  auto all = shipped_candidates();
  ASSERT_FALSE(all.empty());
  for (const auto& c : all) {
    SCOPED_TRACE(c.dir);
    TaskSpec task = load_task(task_path(c.task));
    EvalOptions opt;
    opt.trials = 3;
    opt.salt = 12345;
    opt.time = c.verdict == "pass";
    Json r = to_json(ev.evaluate(task, Candidate::load(c.dir), opt));
    std::cout << c.task << "/" << c.name << ": " << report_verdict(r);
    if (r["error"].is_object())
      std::cout << " [" << r["error"]["kind"].get<std::string>() << "] " << r["error"]["message"].get<std::string>().substr(0, 160);
    if (r["timing"].is_object())
      std::cout << " speedup " << r["timing"]["speedup"]["point"] << " [" << r["timing"]["speedup"]["lo"] << ", "
                << r["timing"]["speedup"]["hi"] << "]";
    if (r["verify"].is_object() && !r["verify"]["passed"].get<bool>()) std::cout << " (" << r["verify"]["reason"].get<std::string>() << ")";
    std::cout << std::endl;
    EXPECT_EQ(report_verdict(r), expected_verdict(c)) << format_report(r);
    if (expected_verdict(c) == "error") {
      EXPECT_EQ(r["error"]["kind"], c.verdict) << format_report(r);
    }
    if (c.beats_eager && r["timing"].is_object()) {
      EXPECT_GT(r["timing"]["speedup"]["lo"].get<double>(), 1.05) << format_report(r);
    }
    if (c.verdict == "pass" && r["timing"].is_object()) {
      EXPECT_TRUE(r["timing"]["outputs_right_after_timing"].get<bool>());
    }
    if (c.verdict == "pass") expect_harness_split(r["phases"]);
    if (expected_verdict(c) != "pass") {
      // The next request in the same evaluator succeeds: a correct candidate for the same task.
      for (const auto& good : all) {
        if (good.task != c.task || good.verdict != "pass") continue;
        EvalOptions quick;
        quick.trials = 1;
        quick.time = false;
        Json g = to_json(ev.evaluate(task, Candidate::load(good.dir), quick));
        EXPECT_EQ(report_verdict(g), "pass") << "after " << c.name << ":\n" << format_report(g);
        break;
      }
    }
  }
}

TEST(EvaluatorGpu, OutputsOfAWrongCandidateAreReportedWithExamples) {
  KFORGE_SKIP_WITHOUT_CUDA();
  Evaluator ev(test_config());
  for (const auto& c : shipped_candidates()) {
    if (c.verdict != "wrong") continue;
    EvalOptions opt;
    opt.trials = 2;
    opt.time = false;
    Json r = to_json(ev.evaluate(load_task(task_path(c.task)), Candidate::load(c.dir), opt));
    ASSERT_EQ(report_verdict(r), "fail") << c.dir;
    bool any_examples = false;
    for (const auto& o : r["verify"]["outputs"]) any_examples |= !o["examples"].empty();
    EXPECT_TRUE(any_examples || !r["verify"]["inputs_modified"].empty()) << format_report(r);
  }
}

// profile(): CUPTI sees every kernel the candidate launched, with the launch plan's grid and block,
// and the kernel_activity check counts the verification calls' launches (two kernels per call for
// the two-launch candidate).
TEST(EvaluatorGpu, ProfileAndKernelActivitySeeEveryLaunch) {
  KFORGE_SKIP_WITHOUT_CUDA();
  Evaluator ev(test_config());
  struct Case {
    const char* task;
    const char* cand;
    int launches;
  };
  for (const Case& c : {Case{"gelu_scale_residual", "fused", 1}, Case{"groupnorm_silu", "fused", 2}}) {
    SCOPED_TRACE(c.task);
    EvalOptions opt;
    opt.trials = 3;
    opt.profile = true;
    Json r = to_json(ev.evaluate(load_task(task_path(c.task)),
                                 Candidate::load(source_dir() + "/datasets/samples/candidates/" + c.task + "/" + c.cand), opt));
    ASSERT_EQ(report_verdict(r), "pass") << format_report(r);
    const Json& prof = r["profile"];
    ASSERT_TRUE(prof.is_object()) << r.dump(2);
    ASSERT_EQ(prof["kernels"].size(), static_cast<size_t>(c.launches)) << prof.dump(2);
    for (const auto& k : prof["kernels"]) {
      EXPECT_GT(k["duration_ns"].get<uint64_t>(), 0u);
      EXPECT_GT(k["occupancy"].get<double>(), 0.0);
      EXPECT_LE(k["occupancy"].get<double>(), 1.0);
      EXPECT_FALSE(k["device_launched"].get<bool>());
    }
    EXPECT_GT(prof["achieved"]["gbps"].get<double>(), 10.0);
    EXPECT_GT(prof["ceilings"]["dram_gbps"].get<double>(), 500.0);
    EXPECT_GT(prof["ceilings"]["fp16_tflops"].get<double>(), prof["ceilings"]["fp32_tflops"].get<double>());
    EXPECT_GT(prof["ceilings"]["tf32_tflops"].get<double>(), prof["ceilings"]["fp32_tflops"].get<double>());
    bool saw_activity = false;
    for (const auto& chk : r["anticheat"]["checks"]) {
      if (chk["name"] != "kernel_activity") continue;
      saw_activity = true;
      EXPECT_TRUE(chk["passed"].get<bool>()) << chk.dump(2);
      // Every verification call: the plain, robustness and state trials the report says ran.
      const int64_t calls = r["verify"]["trials_run"].get<int64_t>();
      EXPECT_GE(calls, 3 + 2) << r["verify"].dump(2);
      EXPECT_EQ(chk["evidence"]["candidate_calls"].get<int64_t>(), calls) << chk.dump(2);
      EXPECT_EQ(chk["evidence"]["launches_expected"].get<int64_t>(), calls * c.launches) << chk.dump(2);
      EXPECT_EQ(chk["evidence"]["launches_seen"].get<int64_t>(), calls * c.launches) << chk.dump(2);
    }
    EXPECT_TRUE(saw_activity) << r["anticheat"].dump(2);
    std::cout << c.task << "/" << c.cand << " profile: " << prof.dump() << std::endl;
  }
}

// Hardware counters through CUPTI's range profiler (EvalOptions::counters): either the values of
// the candidate's kernels (one range per kernel: their duration, and DRAM bytes read of at least
// the 1 GiB input they stream), or a reason they are unavailable on this machine — never a failed
// evaluation. User replay reruns the call once per pass: as many calls as passes.
TEST(EvaluatorGpu, CountersAreReportedOrSaidUnavailable) {
  KFORGE_SKIP_WITHOUT_CUDA();
  Evaluator ev(test_config());
  EvalOptions opt = counters_options();
  const std::vector<std::pair<std::string, size_t>> cases = {{"gelu_scale_residual/fused", 1}, {"groupnorm_silu/fused", 2}};
  for (const auto& [name, kernels] : cases) {
    const std::string task = name.substr(0, name.find('/'));
    Json r = to_json(ev.evaluate(load_task(task_path(task)), Candidate::load(source_dir() + "/datasets/samples/candidates/" + name), opt));
    ASSERT_EQ(report_verdict(r), "pass") << format_report(r);
    const Json& c = r["profile"]["counters"];
    ASSERT_TRUE(c.is_object()) << r["profile"].dump(2);
    std::cout << name << " counters (profile " << r["phases"].value("profile_ms", 0.0) << " ms): " << c.dump() << std::endl;
    if (c.contains("unavailable")) {
      EXPECT_FALSE(c["unavailable"].get<std::string>().empty());
      return;
    }
    ASSERT_EQ(c["kernels"].size(), kernels) << c.dump(2);
    ASSERT_TRUE(c["replay"].is_string());
    if (c["replay"] == "user") {
      EXPECT_EQ(c["calls"].get<size_t>(), c["passes"].get<size_t>()) << c.dump(2);
    }
    // The host setup is made by the first collection in this worker and reused by the next.
    EXPECT_EQ(c["setup_cached"].get<bool>(), kernels == 2) << c.dump(2);
    double read = 0;
    for (const Json& k : c["kernels"]) {
      const Json& m = k["metrics"];
      ASSERT_TRUE(m.contains("gpu__time_duration.sum")) << c.dump(2);
      EXPECT_GT(m["gpu__time_duration.sum"].get<double>(), 0.0);
      read += m.value("dram__bytes_read.sum", 0.0);
    }
    if (c["metrics"].dump().find("dram__bytes_read.sum") != std::string::npos) {
      EXPECT_GT(read, 1.0e9) << c.dump(2);
    }
  }
}

// EvalOptions::counter_metrics: the metrics asked for, in their order, and no others; fewer passes
// than the full list with the throughput metrics (19 on the H200); an unknown metric is listed as
// unsupported, not a failure.
TEST(EvaluatorGpu, CounterMetricsAreTheOnesAskedFor) {
  KFORGE_SKIP_WITHOUT_CUDA();
  Evaluator ev(test_config());
  EvalOptions opt = counters_options();
  opt.counter_metrics = {"gpu__time_duration.sum",     "dram__bytes_read.sum",
                         "dram__bytes_write.sum",      "sm__warps_active.avg.pct_of_peak_sustained_active",
                         "lts__t_sector_hit_rate.pct", "no_such__metric.sum"};
  const TaskSpec task = load_task(task_path("gelu_scale_residual"));
  const Candidate cand = Candidate::load(source_dir() + "/datasets/samples/candidates/gelu_scale_residual/fused");
  Json r = to_json(ev.evaluate(task, cand, opt));
  ASSERT_EQ(report_verdict(r), "pass") << format_report(r);
  const Json& c = r["profile"]["counters"];
  ASSERT_TRUE(c.is_object()) << r["profile"].dump(2);
  std::cout << "chosen metrics (profile " << r["phases"].value("profile_ms", 0.0) << " ms): " << c.dump() << std::endl;
  if (c.contains("unavailable")) {
    EXPECT_FALSE(c["unavailable"].get<std::string>().empty());
    return;
  }
  const std::vector<std::string> want(opt.counter_metrics.begin(), opt.counter_metrics.end() - 1);
  EXPECT_EQ(c["metrics"].get<std::vector<std::string>>(), want) << c.dump(2);
  EXPECT_EQ(c["unsupported"].get<std::vector<std::string>>(), std::vector<std::string>{"no_such__metric.sum"}) << c.dump(2);
  EXPECT_LT(c["passes"].get<size_t>(), 19u) << c.dump(2);
  ASSERT_EQ(c["kernels"].size(), 1u) << c.dump(2);
  const Json& m = c["kernels"][0]["metrics"];
  EXPECT_EQ(m.size(), want.size()) << c.dump(2);
  EXPECT_GT(m.value("dram__bytes_read.sum", 0.0), 1.0e9) << c.dump(2);
}

// The sequential rule (reward/sequential.h) in the judge: a candidate far faster than eager, timed
// with the reward's step at 1.05x, stops at a look that settles it, before max_reps, and says so;
// the same request without thresholds stops by today's rule and records no looks.
TEST(EvaluatorGpu, SequentialRuleStopsOnceTheStepIsSettled) {
  KFORGE_SKIP_WITHOUT_CUDA();
  EvalConfig cfg = test_config();
  cfg.timing.budget_ms = 3000;
  Evaluator ev(cfg);
  std::optional<ShippedCandidate> fast;  // a copy: shipped_candidates() returns a temporary
  for (const auto& c : shipped_candidates())
    if (c.verdict == "pass" && c.beats_eager) fast = c;
  ASSERT_TRUE(fast.has_value()) << "no shipped candidate beats eager";
  const TaskSpec task = load_task(task_path(fast->task));
  EvalOptions opt;
  opt.trials = 1;
  opt.decide_at = {1.05};
  Json r = to_json(ev.evaluate(task, Candidate::load(fast->dir), opt));
  ASSERT_EQ(report_verdict(r), "pass") << format_report(r);
  const Json& t = r["timing"];
  std::cout << fast->dir << ": stopped (" << t["stop"] << ") at " << t["candidate"]["n"] << " pairs; looks " << t["sequential"]["looks"]
            << std::endl;
  EXPECT_EQ(t["stop"], "decided") << t.dump(2);
  EXPECT_LT(t["candidate"]["n"].get<int>(), cfg.timing.max_reps);
  ASSERT_FALSE(t["sequential"]["looks"].empty());
  EXPECT_GT(t["sequential"]["looks"].back()["lo"].get<double>(), 1.05);
  EXPECT_TRUE(t["sequential"]["looks"].back()["decided"].get<bool>());
  EXPECT_GT(t["speedup"]["lo"].get<double>(), 1.05);  // the report's interval agrees

  opt.decide_at.clear();
  Json plain = to_json(ev.evaluate(task, Candidate::load(fast->dir), opt));
  ASSERT_EQ(report_verdict(plain), "pass") << format_report(plain);
  EXPECT_NE(plain["timing"]["stop"], "decided");
  EXPECT_FALSE(plain["timing"].contains("sequential"));
}

// Fail closed (H100, 2026-12-05): the robustness draws' float64 reference of a task too large for
// the device cannot be measured, and then no robustness call would run; a candidate that relies on
// one member's statistics (the corpus's unsafe_softmax: no max subtraction) must not pass unseen.
// softmax_rows at 6x its rows (24 GiB of input): its float64 conditioning needs several times that.
TEST(EvaluatorGpu, RobustnessDrawsThatCannotBeConditionedFailClosed) {
  KFORGE_SKIP_WITHOUT_CUDA();
  EvalConfig cfg = test_config();
  cfg.worker.request_timeout_s = 120;
  Evaluator ev(cfg);
  ev.set_anticheat(AnticheatConfig::load(source_dir() + "/configs/anticheat.yaml"));
  TaskSpec task = load_task(task_path("softmax_rows"));
  task = task.with_dims({{"R", 6 * 131072}});
  EvalOptions opt;
  opt.trials = 2;
  opt.time = false;
  EvalReport r = ev.evaluate(task, Candidate::load(source_dir() + "/anticheat/corpus/unsafe_softmax"), opt);
  std::cout << format_report(r);
  EXPECT_NE(r.verdict, Verdict::pass) << "judged without its robustness draws";
  if (r.verdict == Verdict::error && r.error) {
    const bool harness_memory = r.error->message.find("could not condition the robustness draws") != std::string::npos ||
                                r.error->message.find("out of memory") != std::string::npos;
    EXPECT_TRUE(harness_memory) << r.error->message;
  }
  // The worker is usable afterwards, at the task's own size.
  EvalReport again = ev.evaluate(load_task(task_path("softmax_rows")),
                                 Candidate::load(source_dir() + "/datasets/samples/candidates/softmax_rows/online"), opt);
  EXPECT_EQ(again.verdict, Verdict::pass) << format_report(again);
}
