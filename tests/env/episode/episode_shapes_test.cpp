// A task's other shapes in an episode (issue 30): the prompt says the candidate is checked there,
// verify() shows where it failed, and a submission right only at the task's own shape gets
// shapes.penalty (rule not_general) however fast, or its tier under shapes.not_general: reward.
// Reports are replayed (episode_replay.h); compile() and the static scan run for real.
#include "env/episode/episode.h"

#include <gtest/gtest.h>

#include "tests/env/episode/episode_replay.h"

using namespace kforge;
using namespace kforge::testing;

namespace {

TaskSpec task_with_shapes() {
  TaskSpec t = load_task(sample_task("gelu_scale_residual"));
  t.extra_dims = {{{"B", 1}}, {{"B", 333}, {"D", 4097}}};
  return t;
}

// A fast passing report (3.2x over eager) whose shapes section says `status`, the second shape wrong.
Json report_with_shapes(const std::string& status) {
  Json r = pass_report(1.0, 3.2);
  r["shapes"] = {{"status", status},
                 {"trials", Json::array({{{"dims", {{"B", 1}}}, {"verdict", "pass"}, {"reason", ""}, {"wall_ms", 5.0}},
                                         {{"dims", {{"B", 333}, {"D", 4097}}},
                                          {"verdict", status == "general" ? "pass" : "fail"},
                                          {"reason", status == "general" ? "" : "out: 1 elements never written"},
                                          {"wall_ms", 6.0}}})},
                 {"note", ""},
                 {"wall_ms", 11.0}};
  return r;
}

}  // namespace

TEST_F(EpisodeTest, ASubmissionRightOnlyAtTheTasksOwnShapeGetsThePenalty) {
  KernelEnv env(test_env_config(), RewardConfig{}, replay);
  std::string prompt = env.reset(task_with_shapes(), 1).observation;
  EXPECT_NE(prompt.find("verified again at 2 other sizes of the same dimensions"), std::string::npos) << prompt;
  EXPECT_NE(prompt.find("gets -1. Write the launch plan's grids and arguments over the dimensions' names"), std::string::npos);
  write_candidate(env, "gelu_scale_residual", "fused");
  replay.reports.push_back(report_with_shapes("not_general"));
  StepResult v = env.step(call("verify"));
  EXPECT_NE(v.observation.find("other shapes: FAILED: it works only at this task's own shape"), std::string::npos) << v.observation;
  EXPECT_NE(v.observation.find("at B=333 D=4097: fail (out: 1 elements never written)"), std::string::npos) << v.observation;
  replay.reports.push_back(report_with_shapes("not_general"));
  StepResult s = env.step(call("submit"));
  ASSERT_TRUE(s.terminated);
  EXPECT_EQ(s.reward, -1) << s.info["reward"].dump(2);
  EXPECT_EQ(s.info["reward"]["rule"], "not_general");
  EXPECT_EQ(s.info["reward"]["shapes"]["trials"][1]["dims"]["D"], 4097);
  EXPECT_NE(s.observation.find("reward: -1 (not_general)"), std::string::npos) << s.observation;
}

TEST_F(EpisodeTest, AGeneralSubmissionOrTheRewardOptionKeepsTheTier) {
  for (const std::string status : {"general", "not_general"}) {
    SCOPED_TRACE(status);
    RewardConfig rc;
    rc.shapes.not_general = NotGeneral::reward;
    KernelEnv env(test_env_config(), status == "general" ? RewardConfig{} : rc, replay);
    env.reset(task_with_shapes(), 1);
    write_candidate(env, "gelu_scale_residual", "fused");
    replay.reports.push_back(report_with_shapes(status));
    StepResult s = env.step(call("submit"));
    ASSERT_TRUE(s.terminated);
    EXPECT_EQ(s.reward, 2) << s.info["reward"].dump(2);  // faster than eager, not than the stored torch.compile
    EXPECT_EQ(s.info["reward"]["shapes"]["status"], status);
  }
}
