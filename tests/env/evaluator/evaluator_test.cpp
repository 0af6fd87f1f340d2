// The evaluator's front stages without a GPU: every shipped candidate compiles and its launch plan
// resolves against its task, except the ones meant not to; an endless compile is stopped by the
// compile time limit and the next compile succeeds.
#include "env/evaluator/evaluator.h"

#include <filesystem>

#include <unistd.h>

#include <gtest/gtest.h>

#include "tests/env/evaluator/candidates.h"

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
  for (const char* v : {"pass", "wrong", "compile_error", "launch_error", "runtime_error", "timeout"}) EXPECT_TRUE(verdicts.count(v)) << v;
}

TEST(EvaluatorCheck, EveryCandidateCompilesAndResolvesUnlessItMustNot) {
  Evaluator ev(test_config());
  for (const auto& c : shipped_candidates()) {
    SCOPED_TRACE(c.dir);
    if (c.verdict == "timeout" && c.stage == "compile") continue;  // below, with a short limit
    Json r = to_json(ev.check(load_task(task_path(c.task)), Candidate::load(c.dir)));
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
    Json r = to_json(ev.check(load_task(task_path(c.task)), Candidate::load(c.dir)));
    EXPECT_EQ(r["verdict"], "error");
    EXPECT_EQ(r["error"]["kind"], "timeout") << r.dump(2);
    EXPECT_LT(r["compile"]["wall_ms"].get<double>(), 10000);
    // The compile worker restarts and the next candidate compiles.
    for (const auto& good : shipped_candidates()) {
      if (good.verdict != "pass" || good.task != c.task) continue;
      Json g = to_json(ev.check(load_task(task_path(good.task)), Candidate::load(good.dir)));
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
  Json r = to_json(ev.check(load_task(task_path(good->task)), cand));
  EXPECT_EQ(r["error"]["kind"], "compile_error");
  EXPECT_NE(r["error"]["message"].get<std::string>().find("launch.yaml:2"), std::string::npos) << r["error"]["message"];
}

TEST(EvaluatorCheck, MissingCandidateFilesAreIoErrors) { EXPECT_THROW(Candidate::load("/nonexistent/candidate"), Error); }

// worker.compile_cache_dir: a second evaluator (its own compile worker process) finds what the
// first compiled in the shared directory instead of compiling again; without the directory it
// compiles anew.
TEST(EvaluatorCheck, CompileWorkersShareTheOnDiskCache) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("kforge-cache-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  EvalConfig cfg = test_config();
  cfg.worker.compile_cache_dir = dir.string();
  TaskSpec task = load_task(task_path("gelu_scale_residual"));
  Candidate cand = Candidate::load(source_dir() + "/datasets/samples/candidates/gelu_scale_residual/naive");
  // A source no earlier run compiled: a unique comment.
  cand.source += "\n// cache test " + std::to_string(::getpid()) + "\n";
  EvalReport first, second, third;
  {
    Evaluator a(cfg);
    first = a.check(task, cand);
  }
  {
    Evaluator b(cfg);
    second = b.check(task, cand);
  }
  {
    Evaluator c(test_config());
    third = c.check(task, cand);
  }
  ASSERT_EQ(first.verdict, Verdict::checked) << format_report(first);
  ASSERT_EQ(second.verdict, Verdict::checked) << format_report(second);
  ASSERT_TRUE(third.compile && third.compile->result) << format_report(third);
  EXPECT_FALSE(first.compile->result->cache_hit);
  EXPECT_TRUE(second.compile->result->cache_hit);
  EXPECT_FALSE(third.compile->result->cache_hit);
  EXPECT_EQ(first.compile->result->hash, second.compile->result->hash);
  EXPECT_EQ(to_json(second)["compile"]["resources"], to_json(first)["compile"]["resources"]);
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir)) files += e.path().extension() == ".kfnvrtc";
  EXPECT_EQ(files, 1u);
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) fs::remove(e.path(), ec);
  fs::remove(dir, ec);
}
