// history.reward_from: best_verified judges the version it would reward once more as a submission
// (KernelEnv::confirm_version): the reward is the lower of the two, a catch is the cheating
// penalty, and a policy that profiles many variants of one kernel and lets the best count gains no
// more than one submission would. Reports are replayed (episode_replay.h) through the documented
// schema; the workspace, the parser, the history and the reward rules are real.
#include <cstdio>
#include <random>

#include <gtest/gtest.h>

#include "env/episode/candidate_history.h"
#include "tests/env/episode/episode_replay.h"

using namespace kforge;
using namespace kforge::testing;

TEST_F(EpisodeTest, TheBestVersionIsJudgedAgainAsASubmissionAndTheLowerRewardCounts) {
  KernelEnv env(best_verified_config(), RewardConfig{}, replay);
  env.reset(task_without_baselines(), 1);
  write_candidate(env, "gelu_scale_residual", "fused");
  replay.reports.push_back(pass_report(1.0, 3.2));
  env.step(call("profile"));  // v1: 3.2x over eager, tier 2
  env.step(write_call("kernel.cu", fused("kernel.cu") + "// v2\n"));
  replay.reports.push_back(wrong_report());
  replay.reports.push_back(pass_report(3.2, 3.2));  // v1 again, on fresh draws: correct, not faster
  StepResult s = env.step(call("submit"));
  ASSERT_TRUE(s.terminated);
  EXPECT_TRUE(replay.reports.empty());
  ASSERT_EQ(replay.options.size(), 3u);
  const EvalOptions& again = replay.options.back();
  EXPECT_EQ(again.trials, evaluator.config().verify.submit_trials) << "a submission's trials, not profile()'s";
  EXPECT_TRUE(again.time);
  EXPECT_EQ(replay.candidates.back().files, replay.candidates.front().files) << "v1's files were judged again";

  EXPECT_EQ(s.reward, 1) << s.info["reward"].dump(2);
  EXPECT_EQ(s.info["reward"]["rule"], "correct");
  EXPECT_EQ(s.info["reward"]["version"], 1);
  const Json& c = s.info["reward"]["confirmation"];
  EXPECT_TRUE(c["ran"].get<bool>());
  EXPECT_EQ(c["version"], 1);
  EXPECT_EQ(c["selected"]["rule"], "faster_than_eager");
  EXPECT_EQ(c["rule"], "correct");
  EXPECT_NE(s.observation.find("judged again as a submission: correct (1)"), std::string::npos) << s.observation;

  const CandidateVersion& v1 = *env.history().find(1);
  ASSERT_EQ(v1.judgings.size(), 2u);
  EXPECT_EQ(v1.judgings.back().tool, "confirm");
  EXPECT_EQ(s.info["history"][0]["judgings"][1]["tool"], "confirm") << "the trajectory's history shows the judging";
}

TEST_F(EpisodeTest, AConfirmationThatFailsOrIsCaughtTakesTheBestVersionsRewardAway) {
  struct Case {
    Json report;
    double reward;
    const char* rule;
  };
  for (const Case& k : {Case{wrong_report(), -1, "no_submission"}, Case{fault_report(), -1, "no_submission"},
                        Case{cheat_report("subsampled_output"), RewardConfig{}.failures.cheat, "cheat"}}) {
    SCOPED_TRACE(k.report["verdict"].get<std::string>());
    replay.reports.clear();
    KernelEnv env(best_verified_config(), RewardConfig{}, replay);
    env.reset(task_without_baselines(), 1, {{"max_turns", 3}});
    write_candidate(env, "gelu_scale_residual", "fused");
    replay.reports.push_back(pass_report(1.0, 3.2));
    replay.reports.push_back(k.report);
    StepResult s = env.step(call("profile"));  // v1 passes; turn 3 truncates, and v1 is judged again
    ASSERT_TRUE(s.truncated);
    EXPECT_EQ(s.reward, k.reward) << s.info["reward"].dump(2);
    EXPECT_EQ(s.info["reward"]["rule"], k.rule);
    EXPECT_EQ(s.info["reward"]["confirmation"]["verdict"], k.report["verdict"]);
    EXPECT_FALSE(env.history().find(1)->verified()) << "one failed judging disqualifies a version for good";
  }
}

TEST_F(EpisodeTest, AConfirmationTheJudgeCannotRunRewardsNothingAboveTheLast) {
  // A judge without a GPU (the server's no_gpu): nothing is judged again, so nothing is rewarded above the last.
  struct NoGpuJudge final : CandidateJudge {
    explicit NoGpuJudge(ReplayJudge& r) : replay(r) {}
    EvalReport check(const TaskSpec& t, const Candidate& c) override { return replay.check(t, c); }
    EvalReport evaluate(const TaskSpec& t, const Candidate& c, const EvalOptions& o) override {
      if (replay.reports.empty()) throw NotJudged("no_gpu", "the server has no GPU");
      return replay.evaluate(t, c, o);
    }
    const EvalConfig& eval_config() const override { return replay.eval_config(); }
    ReplayJudge& replay;
  } judge_without_gpu(replay);
  KernelEnv env(best_verified_config(), RewardConfig{}, judge_without_gpu);
  env.reset(task_without_baselines(), 1, {{"max_turns", 3}});
  write_candidate(env, "gelu_scale_residual", "fused");
  replay.reports.push_back(pass_report(1.0, 3.2));
  StepResult s = env.step(call("profile"));
  ASSERT_TRUE(s.truncated);
  EXPECT_EQ(s.info["reward"]["rule"], "no_submission") << s.info["reward"].dump(2);
  EXPECT_FALSE(s.info["reward"]["confirmation"]["ran"].get<bool>());
  EXPECT_NE(s.info["reward"]["confirmation"]["why"].get<std::string>().find("no_gpu"), std::string::npos);
  EXPECT_NE(s.observation.find("could not be judged again"), std::string::npos) << s.observation;
}

// The adaptive exploit: a kernel whose true speedup over eager sits below the tier line is
// rewritten into many variants (a comment each), every one profiled, and the best is left to count.
// Each timing is a fresh draw; now and then one clears the line by chance. Without the confirmation
// the best of them would earn tier 2 far more often than one submission does; with it, the episode
// earns tier 2 no more often than a single submission of the same kernel.
TEST_F(EpisodeTest, ProfilingManyVariantsAndKeepingTheLuckiestEarnsNoMoreThanOneSubmission) {
  const int episodes = 200, variants = 12, controls = 1000;
  const double true_speedup = 1.035;  // below the 1.05 line; each timing's speedup is off by 1 % (sd)
  std::mt19937_64 rng(20261207);
  std::normal_distribution<double> noise(0.0, 0.01);
  auto timed = [&] { return pass_report(1.0, true_speedup * (1 + noise(rng))); };
  int selected_tier2 = 0, rewarded_tier2 = 0, single_tier2 = 0;
  for (int e = 0; e < episodes; ++e) {
    replay.reports.clear();
    KernelEnv env(best_verified_config(), RewardConfig{}, replay);
    env.reset(task_without_baselines(), static_cast<uint64_t>(e), {{"max_turns", 2 + 2 * variants}});
    write_candidate(env, "gelu_scale_residual", "fused");
    StepResult s;
    for (int v = 0; v < variants; ++v) {
      env.step(write_call("kernel.cu", fused("kernel.cu") + "// variant " + std::to_string(v) + "\n"));
      replay.reports.push_back(timed());
      if (v == variants - 1) replay.reports.push_back(timed());  // the confirmation's own draw
      s = env.step(call("profile"));
    }
    ASSERT_TRUE(s.truncated);

    const Json& r = s.info["reward"];
    if (r.contains("confirmation")) selected_tier2 += r["confirmation"]["selected"]["rule"] == "faster_than_eager";
    rewarded_tier2 += r["rule"] == "faster_than_eager";
  }
  // The control: one submission of the kernel, one draw each.
  for (int i = 0; i < controls; ++i)
    single_tier2 +=
        submission_reward(RewardConfig{}, submission_outcome(parse_eval_report(timed())), StoredBaseline{}).rule == "faster_than_eager";
  const double single_rate = static_cast<double>(single_tier2) / controls;
  // One draw clears the line (its interval's lower bound is about 0.6 % below the point) with p of
  // about 2 %; the best of 12 in about 1 - 0.98^12 = 22 % of episodes; confirmed, 22 % x 2 % = 0.5 %.
  SCOPED_TRACE("of " + std::to_string(episodes) + " episodes: best variant at tier 2 " + std::to_string(selected_tier2) +
               ", rewarded tier 2 " + std::to_string(rewarded_tier2) + "; one submission at tier 2 in " + std::to_string(single_tier2) +
               " of " + std::to_string(controls));
  std::printf(
      "best of %d profiled variants, %d episodes: tier 2 selected (what it earned without the confirmation) %d, "
      "rewarded %d; one submission: tier 2 in %d of %d\n",
      variants, episodes, selected_tier2, rewarded_tier2, single_tier2, controls);
  EXPECT_GE(selected_tier2, 5 * single_rate * episodes) << "the exploit's best variant clears the line often: the test has teeth";
  EXPECT_LE(rewarded_tier2, single_rate * episodes + 3) << "no more often than one submission";
}

// A rollout server runs a step where step_lane says: a step that may end a best_verified episode
// with a verified version goes to a GPU lane, whatever its tool, so that the judging can run.
TEST_F(EpisodeTest, AStepThatMayEndABestVerifiedEpisodeRunsOnAGpuLane) {
  const ParsedAction write = parse_action(write_call("notes.md", "x"));
  const ParsedAction compile = parse_action(call("compile"));
  for (RewardFrom mode : {RewardFrom::last_submission, RewardFrom::best_verified}) {
    SCOPED_TRACE(reward_from_name(mode));
    EnvConfig ec = test_env_config();
    ec.history.reward_from = mode;
    KernelEnv env(ec, RewardConfig{}, replay);
    env.reset(task_without_baselines(), 1, {{"max_turns", 5}});
    write_candidate(env, "gelu_scale_residual", "fused");
    EXPECT_EQ(env.step_lane(write), Lane::front) << "nothing verified yet";
    replay.reports.push_back(pass_report(1.0, 3.2));
    env.step(call("profile"));  // turn 3: v1 verified
    EXPECT_EQ(env.step_lane(write), Lane::front) << "turn 4 does not end the episode";
    EXPECT_EQ(env.step_lane(compile), Lane::compile);
    env.step(write_call("notes.md", "y"));  // turn 4
    const bool best = mode == RewardFrom::best_verified;
    EXPECT_EQ(env.step_lane(write), best ? Lane::gpu : Lane::front) << "turn 5 is the last";
    EXPECT_EQ(env.step_lane(compile), best ? Lane::gpu : Lane::compile);
    EXPECT_EQ(env.step_lane(parse_action(call("verify"))), Lane::gpu);
    if (best) replay.reports.push_back(pass_report(1.0, 3.2));
    StepResult s = env.step(write);
    ASSERT_TRUE(s.truncated);
    EXPECT_EQ(s.reward, best ? 2 : -1) << s.info["reward"].dump(2);
    EXPECT_EQ(env.step_lane(write), Lane::front) << "the episode is over";
  }
}
