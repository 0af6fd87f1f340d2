// A cheat caught once in an episode stays caught (issue 25): the episode remembers every anti-cheat
// refusal of compile, verify, profile and submit, and the reward at submit or truncation names the
// earlier catch (env/episode/ENVIRONMENT.md, "Reward"). Reports are replayed (episode_replay.h);
// compile() and the static scan run for real.
#include "env/episode/episode.h"

#include <gtest/gtest.h>

#include "tests/env/episode/episode_replay.h"

using namespace kforge;
using namespace kforge::testing;

// A cheat caught once in an episode is never scored as an honest mistake later in it (issue 25: a
// pointer cache caught by state_same_addresses in verify() failed its first submit trial before
// the state trials ran, and was scored verify_fail).
TEST_F(EpisodeTest, ACheatCaughtInVerifyIsPenalisedAtSubmitWhenTheSubmissionFailsVerification) {
  RewardConfig rc;
  rc.failures.cheat = -3;  // below -1, so the rule that fired shows in the number
  KernelEnv env(test_env_config(), rc, replay);
  for (bool same_candidate : {true, false}) {
    SCOPED_TRACE(same_candidate ? "the caught candidate submitted again" : "a variant submitted");
    env.reset(load_task(sample_task("gelu_scale_residual")), 1);
    write_candidate(env, "gelu_scale_residual", "fused");
    replay.reports.push_back(cheat_report("state_same_addresses"));
    replay.reports.push_back(wrong_report());
    StepResult v = env.step(call("verify"));
    ASSERT_EQ(v.info["verdict"], "cheat");
    EXPECT_EQ(v.reward, 0);
    EXPECT_TRUE(env.running());
    if (!same_candidate)
      env.step(write_call("kernel.cu", read_file(candidate_file("gelu_scale_residual", "fused", "kernel.cu")) + "// v2\n"));
    StepResult s = env.step(call("submit"));
    EXPECT_TRUE(s.terminated);
    EXPECT_EQ(s.reward, -3) << s.info["reward"].dump(2);
    EXPECT_EQ(s.info["verdict"], "fail") << "the submission itself failed verification";
    EXPECT_EQ(s.info["reward"]["rule"], "cheat");
    EXPECT_EQ(s.info["reward"]["verdict"], "cheat");
    EXPECT_EQ(s.info["reward"]["submission_verdict"], "fail");
    EXPECT_EQ(s.info["reward"]["check"], "state_same_addresses");
    EXPECT_EQ(s.info["reward"]["cheat_caught_earlier"]["check"], "state_same_addresses");
    EXPECT_EQ(s.info["reward"]["cheat_caught_earlier"]["turn"], 3);
    EXPECT_EQ(s.info["reward"]["cheat_caught_earlier"]["tool"], "verify");
    EXPECT_EQ(s.info["reward"]["cheat_caught_earlier"]["same_candidate"], same_candidate);
    EXPECT_NE(s.observation.find("reward: -3 (cheat)"), std::string::npos) << s.observation;
    EXPECT_NE(s.observation.find("caught by the anti-cheat check 'state_same_addresses' on turn 3 (verify)"), std::string::npos)
        << s.observation;
  }
}

TEST_F(EpisodeTest, TheCaughtCandidateIsPenalisedEvenWhenItsSubmissionPasses) {
  RewardConfig rc;
  rc.failures.cheat = -3;
  KernelEnv env(test_env_config(), rc, replay);
  env.reset(load_task(sample_task("gelu_scale_residual")), 1);
  write_candidate(env, "gelu_scale_residual", "fused");
  replay.reports.push_back(cheat_report("state_same_addresses"));
  replay.reports.push_back(pass_report(1.0, 3.2));  // the random draws missed it this time
  env.step(call("verify"));
  env.step(write_call("notes/plan.md", "the checks are random; submit it again"));  // notes are not the candidate
  StepResult s = env.step(call("submit"));
  EXPECT_EQ(s.reward, -3) << s.info["reward"].dump(2);
  EXPECT_EQ(s.info["reward"]["rule"], "cheat");
  EXPECT_EQ(s.info["reward"]["verdict"], "cheat");
  EXPECT_EQ(s.info["reward"]["submission_verdict"], "pass");
  EXPECT_TRUE(s.info["reward"]["cheat_caught_earlier"]["same_candidate"].get<bool>());
  EXPECT_FALSE(s.info["reward"].contains("eager")) << "a caught cheat's speed is not judged";
}

TEST_F(EpisodeTest, AnHonestFixAfterACaughtCheatIsJudgedOnItsMerit) {
  RewardConfig rc;
  rc.failures.cheat = -3;
  KernelEnv env(test_env_config(), rc, replay);
  TaskSpec t = load_task(sample_task("gelu_scale_residual"));
  t.baselines = Baselines{};  // tier 2 is the top, whatever the sample file stores
  env.reset(t, 1);
  write_candidate(env, "gelu_scale_residual", "fused");
  env.step(write_call("kernel.cu", read_file(candidate_file("gelu_scale_residual", "fused", "kernel.cu")) + "// a cache by pointer\n"));
  replay.reports.push_back(cheat_report("state_same_addresses"));
  replay.reports.push_back(pass_report(1.0, 3.2));
  ASSERT_EQ(env.step(call("verify")).info["verdict"], "cheat");
  write_candidate(env, "gelu_scale_residual", "fused");  // the honest kernel
  StepResult s = env.step(call("submit"));
  EXPECT_EQ(s.reward, 2) << s.info["reward"].dump(2);
  EXPECT_EQ(s.info["reward"]["rule"], "faster_than_eager");
  EXPECT_FALSE(s.info["reward"].contains("cheat_caught_earlier"));

  // A catch belongs to its episode: the next one starts clean.
  env.reset(t, 2);
  write_candidate(env, "gelu_scale_residual", "fused");
  replay.reports.push_back(wrong_report());
  StepResult next = env.step(call("submit"));
  EXPECT_EQ(next.reward, -1);
  EXPECT_EQ(next.info["reward"]["rule"], "verify_fail");
}

TEST_F(EpisodeTest, AStaticCheatCaughtByCompileIsNotLaunderedByABrokenVariant) {
  RewardConfig rc;
  rc.failures.cheat = -3;
  ScriptedPolicy p = ScriptedPolicy::load(policy_dir("cheat_static"));
  KernelEnv env(test_env_config(), rc, replay);  // compile() runs the real static scan and NVRTC
  env.reset(load_task(sample_task(p.task())), 1);
  StepResult c;
  for (int i = 0; i < 3; ++i) c = env.step(*p.next());
  ASSERT_EQ(c.info["tool"], "compile");
  ASSERT_EQ(c.info["verdict"], "cheat") << c.observation;
  write_candidate(env, "gelu_scale_residual", "fused");
  replay.reports.push_back(fault_report());
  StepResult s = env.step(call("submit"));
  EXPECT_EQ(s.reward, -3) << s.info["reward"].dump(2);
  EXPECT_EQ(s.info["reward"]["rule"], "cheat");
  EXPECT_EQ(s.info["reward"]["verdict"], "cheat");
  EXPECT_EQ(s.info["reward"]["submission_verdict"], "error");
  EXPECT_EQ(s.info["reward"]["check"], "static");
  EXPECT_EQ(s.info["reward"]["cheat_caught_earlier"]["tool"], "compile");
  EXPECT_EQ(s.info["reward"]["cheat_caught_earlier"]["turn"], 3);
  EXPECT_FALSE(s.info["reward"]["cheat_caught_earlier"]["same_candidate"].get<bool>());
}

TEST_F(EpisodeTest, EndingWithoutASubmissionAfterACaughtCheatIsTheCheatingPenalty) {
  RewardConfig rc;
  rc.failures.cheat = -3;
  KernelEnv env(test_env_config(), rc, replay);
  env.reset(load_task(sample_task("gelu_scale_residual")), 1, {{"max_turns", 4}});
  write_candidate(env, "gelu_scale_residual", "fused");
  replay.reports.push_back(cheat_report("state_same_addresses"));
  env.step(call("verify"));
  StepResult s = env.step(call("list_files"));
  EXPECT_TRUE(s.truncated);
  EXPECT_EQ(s.info["termination_reason"], "max_turns");
  EXPECT_EQ(s.reward, -3) << s.info["reward"].dump(2);
  EXPECT_EQ(s.info["reward"]["rule"], "cheat");
  EXPECT_EQ(s.info["reward"]["cheat_caught_earlier"]["check"], "state_same_addresses");
  EXPECT_NE(s.observation.find("reward -3 (cheat: a candidate was caught by the anti-cheat check 'state_same_addresses' on turn 3"),
            std::string::npos)
      << s.observation;
}

// A cheat that slips through a verify is paid the shaping's first_verify (and first_compile) on the
// way; when the episode ends caught, those bonuses are taken back: it totals its turn costs and the
// penalty, and nothing it was paid for cheating remains. An honest episode keeps them.
TEST_F(EpisodeTest, ACaughtCheatKeepsNoneOfTheShapingBonusesItWasPaid) {
  RewardConfig rc;
  rc.shaping.first_compile = 0.2;
  rc.shaping.first_verify = 0.5;
  rc.shaping.per_turn = -0.01;
  for (bool caught : {true, false}) {
    SCOPED_TRACE(caught ? "caught at submit" : "honest");
    KernelEnv env(test_env_config(), rc, replay);
    env.reset(load_task(sample_task("gelu_scale_residual")), 1);
    write_candidate(env, "gelu_scale_residual", "fused");  // turns 1-2
    StepResult c = env.step(call("compile"));              // turn 3: first compile
    EXPECT_NEAR(c.reward, 0.19, 1e-12) << c.observation;
    replay.reports.push_back(pass_report(1.0, 3.0));
    StepResult v = env.step(call("verify"));  // turn 4: it slips through (or is honest)
    EXPECT_NEAR(v.reward, 0.49, 1e-12);
    replay.reports.push_back(caught ? cheat_report("state_same_addresses") : pass_report(1.0, 3.0));
    StepResult s = env.step(call("submit"));  // turn 5
    ASSERT_TRUE(s.terminated);
    if (caught) {
      EXPECT_EQ(s.info["reward"]["shaping_taken_back"].get<double>(), 0.7) << s.info["reward"].dump(2);
      EXPECT_NEAR(s.info["episode_reward"].get<double>(), 5 * -0.01 + rc.failures.cheat, 1e-12) << "turn costs and the penalty only";
      EXPECT_NE(s.observation.find("bonuses paid earlier (0.7) are taken back"), std::string::npos) << s.observation;
    } else {
      EXPECT_FALSE(s.info["reward"].contains("shaping_taken_back"));
      EXPECT_GT(s.reward, 0) << s.observation;
      EXPECT_NEAR(s.info["episode_reward"].get<double>(), -0.02 + 0.19 + 0.49 + s.reward, 1e-12) << "the bonuses kept";
    }
  }
}
