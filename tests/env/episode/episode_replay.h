#pragma once
// The episode suites' replay of GPU reports: ReplayJudge compiles for real and answers evaluate()
// with queued reports written in the documented schema (env/judge/EVAL_REPORT.md), the reports a
// test queues (pass, wrong, cheat), and the fixture with a real evaluator beside it.
#include <deque>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "env/episode/episode.h"
#include "tests/env/episode/episode_fixtures.h"

namespace kforge::testing {

inline std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline Json write_call(const std::string& path, const std::string& content) {
  return {{"name", "write_file"}, {"arguments", {{"path", path}, {"content", content}}}};
}
inline Json call(const std::string& name) { return {{"name", name}, {"arguments", Json::object()}}; }

// compile() for real; evaluate() answers with the next queued report (and records its options).
class ReplayJudge final : public CandidateJudge {
 public:
  explicit ReplayJudge(Evaluator& ev) : ev_(ev) {}
  Json check(const TaskSpec& t, const Candidate& c) override { return ev_.check(t, c); }
  Json evaluate(const TaskSpec& t, const Candidate& c, const EvalOptions& o) override {
    options.push_back(o);
    EXPECT_FALSE(reports.empty()) << "an evaluation nobody expected";
    if (reports.empty()) return Json{{"verdict", "error"}, {"error", {{"kind", "internal_error"}, {"message", "no report"}}}};
    Json r = reports.front();
    reports.pop_front();
    return r;
  }
  const EvalConfig& eval_config() const override { return ev_.config(); }
  std::deque<Json> reports;
  std::vector<EvalOptions> options;

 private:
  Evaluator& ev_;
};

// A passing report with timing samples (candidate `cand_ms`, eager `eager_ms`, 30 of each, 1 % spread).
inline Json pass_report(double cand_ms, double eager_ms, double gpu_ms = 500) {
  std::vector<double> c, e;
  for (int i = 0; i < 30; ++i) {
    double f = 1 + 0.01 * ((i * 7) % 11 - 5) / 5.0;
    c.push_back(cand_ms * f);
    e.push_back(eager_ms * f);
  }
  return {{"schema", "kforge.eval/1"},
          {"verdict", "pass"},
          {"error", nullptr},
          {"device", {{"name", "NVIDIA H200"}}},
          {"compile", {{"ok", true}, {"arch", "sm_90a"}, {"log", ""}, {"resources", Json::array()}}},
          {"plan", {{"launches", 1}, {"workspace_bytes", 0}}},
          {"verify", {{"passed", true}, {"trials_run", 10}, {"outputs", Json::array()}}},
          {"timing",
           {{"candidate", {{"median_ms", cand_ms}, {"n", 30}}},
            {"reference", {{"median_ms", eager_ms}, {"n", 30}}},
            {"candidate_samples_ms", c},
            {"reference_samples_ms", e},
            {"speedup", {{"point", eager_ms / cand_ms}, {"lo", eager_ms / cand_ms * 0.98}, {"hi", eager_ms / cand_ms * 1.02}, {"confidence", 0.95}}}}},
          {"gpu_request_wall_ms", gpu_ms}};
}

// A report of a candidate that computes the wrong function (its first trial failed).
inline Json wrong_report() {
  Json wrong = pass_report(1, 1);
  wrong["verdict"] = "fail";
  wrong["timing"] = nullptr;
  wrong["verify"] = {{"passed", false}, {"trials_run", 1}, {"failed_trial", 0}, {"reason", "out: 134217728 elements never written"},
                     {"outputs", Json::array({{{"name", "out"}, {"numel", 268435456}, {"mismatches", 134217728}, {"unwritten", 134217728},
                                                {"max_abs_error", 0.0}, {"max_rel_error", 0.0},
                                                {"examples", Json::array({{{"index", 134217728}, {"candidate", "nan"}, {"reference", 0.5}}})}}})}};
  return wrong;
}

// A report of a candidate refused by the anti-cheat check `check`.
inline Json cheat_report(const std::string& check) {
  Json r = pass_report(1.0, 3.2);
  r["verdict"] = "cheat";
  r["timing"] = nullptr;
  r["anticheat"] = {{"verdict", "cheat"}, {"check", check}, {"message", "new values in the previous call's buffers were not computed"}};
  return r;
}

class EpisodeTest : public ::testing::Test {
 protected:
  EpisodeTest() : evaluator(test_eval_config()), judge(evaluator), replay(evaluator) {}
  Evaluator evaluator;
  EvaluatorJudge judge;
  ReplayJudge replay;
};

inline void write_candidate(KernelEnv& env, const std::string& task, const std::string& cand) {
  for (const char* f : {"kernel.cu", "launch.yaml"}) {
    StepResult s = env.step(write_call(f, read(candidate_file(task, cand, f))));
    ASSERT_TRUE(s.info["tool_ok"].get<bool>()) << s.observation;
  }
}

}  // namespace kforge::testing
