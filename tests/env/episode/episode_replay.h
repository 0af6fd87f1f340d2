#pragma once
// The episode suites' replay of GPU reports: ReplayJudge compiles for real and answers evaluate()
// with queued reports written in the documented schema (env/evaluator/EVAL_REPORT.md), the reports a
// test queues (pass, wrong, cheat), and the fixture with a real evaluator beside it.
#include <deque>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "configs/file_reader.h"
#include "env/episode/episode.h"
#include "tests/env/episode/episode_fixtures.h"

namespace kforge::testing {

inline Json write_call(const std::string& path, const std::string& content) {
  return {{"name", "write_file"}, {"arguments", {{"path", path}, {"content", content}}}};
}
inline Json call(const std::string& name) { return {{"name", name}, {"arguments", Json::object()}}; }

// compile() for real; evaluate() answers with the next queued report, read through the report's
// JSON edge (parse_eval_report: the documented schema, strictly), and records its options.
class ReplayJudge final : public CandidateJudge {
 public:
  explicit ReplayJudge(Evaluator& ev) : ev_(ev) {}
  EvalReport check(const TaskSpec& t, const Candidate& c) override { return ev_.check(t, c); }
  EvalReport evaluate(const TaskSpec& t, const Candidate& c, const EvalOptions& o) override {
    options.push_back(o);
    candidates.push_back(c);
    EXPECT_FALSE(reports.empty()) << "an evaluation nobody expected";
    if (reports.empty()) {
      EvalReport none;
      none.error = ReportError{"internal_error", "no report"};
      return none;
    }
    Json r = reports.front();
    reports.pop_front();
    return parse_eval_report(r);
  }
  const EvalConfig& eval_config() const override { return ev_.config(); }
  std::deque<Json> reports;
  std::vector<EvalOptions> options;
  std::vector<Candidate> candidates;  // what the episode sent, in order

 private:
  Evaluator& ev_;
};

// A passing report with timing samples (candidate `cand_ms`, eager `eager_ms`, 30 of each, 1 % spread).
inline Json pass_report(double cand_ms, double eager_ms, double gpu_ms = 500) {
  EvalReport r;
  r.task = "gelu_scale_residual";
  r.candidate = "workspace";
  r.verdict = Verdict::pass;
  r.device = GpuDevice{};
  r.device->name = "NVIDIA H200";
  CompileResult compiled;
  compiled.ok = true;
  r.compile = CompileSection{true, "", "sm_90a", 10.0, compiled};
  r.plan = PlanSection{1, 0};
  r.verify = VerifySection{};
  r.verify->passed = true;
  r.verify->trials_run = 10;
  r.anticheat = AnticheatSection{{CheckOutcome{"static", true, "", Json::object()}}};
  TimingSection t;
  for (int i = 0; i < 30; ++i) {
    double f = 1 + 0.01 * ((i * 7) % 11 - 5) / 5.0;
    t.candidate_samples_ms.push_back(cand_ms * f);
    t.reference_samples_ms.push_back(eager_ms * f);
  }
  t.candidate.median = cand_ms;
  t.candidate.n = 30;
  t.reference.median = eager_ms;
  t.reference.n = 30;
  t.speedup.point = eager_ms / cand_ms;
  t.speedup.lo = eager_ms / cand_ms * 0.98;
  t.speedup.hi = eager_ms / cand_ms * 1.02;
  t.speedup.confidence = 0.95;
  r.timing = t;
  r.gpu_request_wall_ms = gpu_ms;
  return to_json(r);
}

// A report of a candidate that computes the wrong function (its first trial failed).
inline Json wrong_report() {
  Json wrong = pass_report(1, 1);
  wrong["verdict"] = "fail";
  wrong["timing"] = nullptr;
  wrong["verify"] = {
      {"passed", false},
      {"trials_run", 1},
      {"failed_trial", 0},
      {"reason", "out: 134217728 elements never written"},
      {"outputs", Json::array({{{"name", "out"},
                                {"numel", 268435456},
                                {"mismatches", 134217728},
                                {"unwritten", 134217728},
                                {"max_abs_error", 0.0},
                                {"max_rel_error", 0.0},
                                {"examples", Json::array({{{"index", 134217728}, {"candidate", "nan"}, {"reference", 0.5}}})}}})}};
  return wrong;
}

// A report of a candidate that faulted on the GPU after compiling.
inline Json fault_report() {
  Json fault = pass_report(1, 1, 50.0);
  fault["verdict"] = "error";
  fault["error"] = {{"kind", "runtime_error"}, {"message", "an illegal memory access was encountered"}};
  fault["verify"] = nullptr;
  fault["timing"] = nullptr;
  return fault;
}

// The anti-cheat section of a report refused by `check`, in the documented schema.
inline Json cheat_section(const std::string& check, const std::string& message) {
  AnticheatSection a{{CheckOutcome{"static", true, "", Json::object()}, CheckOutcome{check, false, message, Json::object()}}};
  return to_json(a);
}

// A report of a candidate refused by the anti-cheat check `check`.
inline Json cheat_report(const std::string& check) {
  Json r = pass_report(1.0, 3.2);
  r["verdict"] = "cheat";
  r["timing"] = nullptr;
  r["anticheat"] = cheat_section(check, "new values in the previous call's buffers were not computed");
  return r;
}

class EpisodeTest : public ::testing::Test {
 protected:
  EpisodeTest() : evaluator(test_eval_config()), judge(evaluator), replay(evaluator) {}
  Evaluator evaluator;
  EvaluatorJudge judge;
  ReplayJudge replay;
};

// The candidate history's suites (candidate_history_test.cpp, best_version_confirm_test.cpp): a file
// of the sample's fused GELU candidate, the sample task without stored baselines (tier 2, faster
// than eager, is the top), and the test environment with history.reward_from: best_verified.
inline std::string fused(const char* file) { return read_file(candidate_file("gelu_scale_residual", "fused", file)); }
inline TaskSpec task_without_baselines() {
  TaskSpec t = load_task(sample_task("gelu_scale_residual"));
  t.baselines = Baselines{};
  return t;
}
inline EnvConfig best_verified_config() {
  EnvConfig c = test_env_config();
  c.history.reward_from = RewardFrom::best_verified;
  return c;
}

inline void write_candidate(KernelEnv& env, const std::string& task, const std::string& cand) {
  for (const char* f : {"kernel.cu", "launch.yaml"}) {
    StepResult s = env.step(write_call(f, read_file(candidate_file(task, cand, f))));
    ASSERT_TRUE(s.info["tool_ok"].get<bool>()) << s.observation;
  }
}

}  // namespace kforge::testing
