// Issue 30's demonstration on a GPU: the scripted policy improve_regress_restore profiles the
// scalar GELU kernel (v1, ~2.5x eager on an H200), then the float4 one (v2, ~3.2x), verifies a
// broken third (v3), reads history() and diff(2, 3), restores v2 and submits it. With
// history.reward_from: best_verified, the reward is v2's, the best verified version, also when the
// episode is cut short right after the regression; under last_submission that cut-short episode
// earns the no-submission reward. The log-speedup shaping term (weight 0.5) makes a faster
// version's reward higher within tier 2, so "best" is decided by speed, not by the tie rule.
#include <cstdio>
#include <memory>

#include <gtest/gtest.h>

#include "env/cuda/cuda_probe.h"
#include "tests/env/episode/episode_fixtures.h"

using namespace kforge;
using namespace kforge::testing;

namespace {

class HistoryGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!cuda_device_present(&why)) {  // the episode suites stay torch-free: the driver probe, not timing.h's
      std::printf("KFORGE_SKIPPED: no CUDA device on this machine (%s); run on a GPU host (ctest -L gpu)\n", why.c_str());
      GTEST_SKIP() << "no CUDA device: " << why;
    }
    EvalConfig c;
    c.worker.arch = "";  // the GPU's own
    evaluator = std::make_unique<Evaluator>(c);
    judge = std::make_unique<EvaluatorJudge>(*evaluator);
  }
  std::vector<PlayedStep> run(RewardFrom from, const Json& options = Json::object()) {
    ScriptedPolicy p = ScriptedPolicy::load(policy_dir("improve_regress_restore"));
    TaskSpec task = load_task(sample_task(p.task()));
    task.baselines = Baselines{};  // tier 2 is the top, whatever the sample stores
    EnvConfig ec = test_env_config();
    ec.history.reward_from = from;
    RewardConfig rc;
    rc.shaping.log_speedup_weight = 0.5;
    env = std::make_unique<KernelEnv>(ec, rc, *judge);
    auto steps = play(*env, p, task, 30, options);
    print_steps(reward_from_name(from), steps);
    return steps;
  }
  std::unique_ptr<Evaluator> evaluator;
  std::unique_ptr<EvaluatorJudge> judge;
  std::unique_ptr<KernelEnv> env;
};

}  // namespace

TEST_F(HistoryGpuTest, APolicyThatImprovesRegressesAndRestoresIsRewardedByItsBestVersion) {
  auto steps = run(RewardFrom::best_verified);
  ASSERT_EQ(steps.size(), 13u);
  EXPECT_EQ(steps[2].result.info["version"], 1);
  EXPECT_EQ(steps[5].result.info["version"], 2);
  EXPECT_EQ(steps[8].result.info["version"], 3);
  EXPECT_EQ(steps[8].result.info["verdict"], "fail") << steps[8].result.observation;
  EXPECT_NE(steps[9].result.observation.find("v3  fail (not verified)"), std::string::npos) << steps[9].result.observation;
  EXPECT_NE(steps[10].result.observation.find("--- v2/kernel.cu\n+++ v3/kernel.cu\n"), std::string::npos) << steps[10].result.observation;
  EXPECT_TRUE(steps[11].result.info["tool_ok"].get<bool>()) << steps[11].result.observation;

  const auto& versions = env->history().versions();
  ASSERT_EQ(versions.size(), 3u);
  ASSERT_TRUE(versions[0].verified() && versions[1].verified()) << steps[9].result.observation;
  EXPECT_FALSE(versions[2].verified());
  ASSERT_TRUE(versions[0].speedup && versions[1].speedup);
  EXPECT_GT(versions[1].speedup->point, versions[0].speedup->point) << "v2 (float4) is faster than v1 (scalar)";
  if (steps[5].result.info["report"].value("profile", Json()).is_object()) {
    EXPECT_TRUE(versions[1].counters.is_object()) << "profile() kept its key figures";
  }

  const StepResult& s = steps.back().result;
  ASSERT_TRUE(s.terminated);
  EXPECT_EQ(s.info["version"], 2) << "the restored candidate is v2 again";
  EXPECT_EQ(s.info["reward"]["version"], 2) << s.info["reward"].dump(2);
  EXPECT_EQ(s.info["reward"]["rule"], "faster_than_eager");
  EXPECT_GT(s.reward, 2) << "tier 2 plus 0.5 ln(speedup)";
  EXPECT_EQ(s.info["history"].size(), 3u);
}

TEST_F(HistoryGpuTest, CutShortAfterTheRegressionTheBestVersionStillPaysOnlyUnderTheOption) {
  // max_turns 9 ends the episode on the failing verify of v3, before the restore.
  auto best = run(RewardFrom::best_verified, {{"max_turns", 9}});
  ASSERT_EQ(best.size(), 9u);
  const StepResult& b = best.back().result;
  ASSERT_TRUE(b.truncated);
  EXPECT_EQ(b.info["reward"]["rule"], "faster_than_eager") << b.info["reward"].dump(2);
  EXPECT_EQ(b.info["reward"]["version"], 2);
  EXPECT_EQ(b.info["reward"]["last"]["rule"], "no_submission");
  EXPECT_GT(b.reward, 2);
  EXPECT_TRUE(b.info["reward"]["confirmation"]["ran"].get<bool>()) << "v2 was judged again as a submission";
  EXPECT_EQ(b.info["reward"]["confirmation"]["rule"], "faster_than_eager");
  EXPECT_EQ(env->history().find(2)->judgings.back().tool, "confirm");
  const double v2_speedup = env->history().find(2)->speedup->point;

  auto last = run(RewardFrom::last_submission, {{"max_turns", 9}});
  const StepResult& l = last.back().result;
  ASSERT_TRUE(l.truncated);
  EXPECT_EQ(l.reward, -1) << l.info["reward"].dump(2);
  EXPECT_EQ(l.info["reward"]["rule"], "no_submission");
  std::printf("v2 speedup %.3fx; best_verified reward %.3f, last_submission reward %.3f\n", v2_speedup, b.reward, l.reward);
}
