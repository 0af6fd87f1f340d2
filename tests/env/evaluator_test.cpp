// The evaluator's front stages without a GPU: every shipped candidate compiles and its launch plan
// resolves against its task, except the ones meant not to; an endless compile is stopped by the
// compile time limit and the next compile succeeds.
#include "env/evaluator.h"

#include <gtest/gtest.h>

#include "tests/env/candidates.h"

using namespace kforge;
using namespace kforge::testing;

namespace {

EvalConfig test_config() {
  EvalConfig c;
  c.worker.compile_timeout_s = 20;
  c.worker.arch = "sm_90a";
  return c;
}

}  // namespace

TEST(EvaluatorCheck, ShipsCandidatesForEveryTaskWithEveryVerdict) {
  auto all = shipped_candidates();
  std::set<std::string> tasks, verdicts;
  int beats = 0;
  for (const auto& c : all) {
    if (c.verdict == "pass") tasks.insert(c.task);
    verdicts.insert(c.verdict);
    beats += c.beats_eager;
  }
  EXPECT_GE(tasks.size(), 13u) << "a correct candidate for every sample task";
  EXPECT_GE(beats, 4);
  for (const char* v : {"pass", "wrong", "compile_error", "launch_error", "runtime_error", "timeout"})
    EXPECT_TRUE(verdicts.count(v)) << v;
}

TEST(EvaluatorCheck, EveryCandidateCompilesAndResolvesUnlessItMustNot) {
  Evaluator ev(test_config());
  for (const auto& c : shipped_candidates()) {
    SCOPED_TRACE(c.dir);
    if (c.verdict == "timeout" && c.stage == "compile") continue;  // below, with a short limit
    Json r = ev.check(load_task(task_path(c.task)), Candidate::load(c.dir));
    if (c.verdict == "compile_error") {
      EXPECT_EQ(r["verdict"], "error");
      EXPECT_EQ(r["error"]["kind"], "compile_error") << r.dump(2);
      EXPECT_FALSE(r["error"]["message"].get<std::string>().empty());
    } else {
      EXPECT_EQ(r["verdict"], "checked") << r.dump(2);
      EXPECT_GT(r["compile"]["resources"].size(), 0u);
      EXPECT_GT(r["compile"]["resources"][0]["registers"].get<int>(), 0);
    }
  }
}

TEST(EvaluatorCheck, AnEndlessCompileIsStoppedAndTheNextCompileWorks) {
  EvalConfig cfg = test_config();
  cfg.worker.compile_timeout_s = 3;
  Evaluator ev(cfg);
  int seen = 0;
  for (const auto& c : shipped_candidates()) {
    if (!(c.verdict == "timeout" && c.stage == "compile")) continue;
    ++seen;
    Json r = ev.check(load_task(task_path(c.task)), Candidate::load(c.dir));
    EXPECT_EQ(r["verdict"], "error");
    EXPECT_EQ(r["error"]["kind"], "timeout") << r.dump(2);
    EXPECT_LT(r["compile"]["wall_ms"].get<double>(), 10000);
    // The compile worker restarts and the next candidate compiles.
    for (const auto& good : shipped_candidates()) {
      if (good.verdict != "pass" || good.task != c.task) continue;
      Json g = ev.check(load_task(task_path(good.task)), Candidate::load(good.dir));
      EXPECT_EQ(g["verdict"], "checked") << g.dump(2);
      break;
    }
    EXPECT_EQ(ev.compile_worker().starts(), 2);
  }
  EXPECT_GE(seen, 1) << "ship an endless-compile candidate";
}

TEST(EvaluatorCheck, PlanErrorsNameTheirLine) {
  auto all = shipped_candidates();
  auto good = std::find_if(all.begin(), all.end(), [](const auto& c) { return c.verdict == "pass"; });
  ASSERT_NE(good, all.end());
  Candidate cand = Candidate::load(good->dir);
  cand.plan_text = "launches:\n  - kernel: no_such_kernel\n    grid: [1]\n    block: [32]\n    args: []\n";
  Evaluator ev(test_config());
  Json r = ev.check(load_task(task_path(good->task)), cand);
  EXPECT_EQ(r["error"]["kind"], "compile_error");
  EXPECT_NE(r["error"]["message"].get<std::string>().find("launch.yaml:2"), std::string::npos) << r["error"]["message"];
}

TEST(EvaluatorCheck, MissingCandidateFilesAreIoErrors) {
  EXPECT_THROW(Candidate::load("/nonexistent/candidate"), Error);
}
