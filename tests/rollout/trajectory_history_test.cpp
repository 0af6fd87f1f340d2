// The candidate history in a recorded trajectory (issue 30, rollout/TRAJECTORY_FORMAT.md): an
// episode's versions, with their files, verdicts and figures, written as the server writes them
// (KernelEnv::history().to_json(true) beside reward_from) survive the HDF5 file and its journal
// byte for byte, and a version's files read back are the candidate that was judged.
#include <gtest/gtest.h>

#include "rollout/trajectory_file.h"
#include "tests/env/episode/episode_replay.h"
#include "tests/test_paths.h"

using namespace kforge;
using namespace kforge::testing;

TEST_F(EpisodeTest, ATrajectoryRecordsTheCandidateHistoryWithFilesAndFigures) {
  EnvConfig ec = test_env_config();
  ec.history.reward_from = RewardFrom::best_verified;
  KernelEnv env(ec, RewardConfig{}, replay);
  TaskSpec task = load_task(sample_task("gelu_scale_residual"));
  task.baselines = Baselines{};
  env.reset(task, 3);
  write_candidate(env, "gelu_scale_residual", "fused");
  replay.reports.push_back(pass_report(1.0, 3.2));
  env.step(call("profile"));
  std::string v2 = read_file(candidate_file("gelu_scale_residual", "fused", "kernel.cu")) + "// v2 — regressed\n";
  env.step(write_call("kernel.cu", v2));
  replay.reports.push_back(wrong_report());
  replay.reports.push_back(pass_report(1.0, 3.2));  // v1 judged again before it pays
  StepResult last = env.step(call("submit"));
  ASSERT_TRUE(last.terminated);

  Json t = {{"schema", "kforge.trajectory/1"},
            {"episode", "ep-history"},
            {"task", task.id},
            {"turns", Json::array()},
            {"reward_from", reward_from_name(env.config().history.reward_from)},
            {"history", env.history().to_json(true)}};
  std::string path = temp_path("kforge_trajectory_history_test", "history.h5");
  std::filesystem::remove(path);
  std::filesystem::remove(TrajectoryFile::journal_path(path));
  { TrajectoryFile(path, false).append(t); }
  std::vector<Json> back = read_trajectories(path);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0], t) << "the history survives the file as written";

  const Json& h = back[0]["history"];
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(back[0]["reward_from"], "best_verified");
  EXPECT_EQ(h[0]["version"], 1);
  EXPECT_TRUE(h[0]["verified"].get<bool>());
  EXPECT_EQ(h[0]["judgings"][0]["tool"], "profile");
  EXPECT_EQ(h[0]["judgings"][1]["tool"], "confirm");
  EXPECT_EQ(h[0]["speedup"]["point"], 3.2);
  EXPECT_EQ(h[0]["files"]["kernel.cu"], read_file(candidate_file("gelu_scale_residual", "fused", "kernel.cu")));
  EXPECT_EQ(h[0]["files"]["launch.yaml"], read_file(candidate_file("gelu_scale_residual", "fused", "launch.yaml")));
  EXPECT_EQ(h[1]["verdict"], "fail");
  EXPECT_EQ(h[1]["judgings"][0]["tool"], "submit");
  EXPECT_EQ(h[1]["files"]["kernel.cu"], v2) << "UTF-8 text round trips";
  EXPECT_TRUE(h[1]["speedup"].is_null());
  // The reward named the version it came from; the trajectory's history has it.
  EXPECT_EQ(last.info["reward"]["version"], h[0]["version"]);
  EXPECT_EQ(last.info["history"].size(), 2u);
  EXPECT_FALSE(last.info["history"][0].contains("files"));
}
