// The candidate history (issue 30): every candidate verify/profile/submit judges is a version;
// history(), restore(version), diff(a, b) and submit(version=N) read it; history.reward_from:
// best_verified rewards the best verified version. Reports are replayed (episode_replay.h) through
// the documented schema; the workspace, the parser, compile() and the reward rules are real.
#include "env/episode/candidate_history.h"

#include <gtest/gtest.h>

#include "configs/yaml_reader.h"
#include "env/episode/prompt.h"
#include "tests/env/episode/episode_replay.h"

using namespace kforge;
using namespace kforge::testing;

namespace {

Json hermes(const std::string& name, const Json& arguments) {
  return "<tool_call>" + Json{{"name", name}, {"arguments", arguments}}.dump() + "</tool_call>";
}

}  // namespace

TEST(HistoryTools, ParseFromHermesTextWithVersionNumbers) {
  ParsedAction r = parse_action(Json("I will go back. <tool_call>{\"name\": \"restore\", \"arguments\": {\"version\": 2}}</tool_call>"));
  ASSERT_TRUE(r.call) << r.error;
  EXPECT_EQ(r.call->tool, Tool::restore);
  EXPECT_EQ(r.call->arguments["version"], 2);
  for (const Json& written : {Json("3"), Json("v3"), Json(3)}) {
    ParsedAction d = parse_action(hermes("diff", {{"a", 1}, {"b", written}}));
    ASSERT_TRUE(d.call) << written.dump() << ": " << d.error;
    EXPECT_EQ(d.call->arguments["b"], 3) << "a version is read as its number: " << written.dump();
  }
  ParsedAction s = parse_action(hermes("submit", {{"version", 1}}));
  ASSERT_TRUE(s.call) << s.error;
  EXPECT_EQ(s.call->tool, Tool::submit);
  ASSERT_TRUE(parse_action(hermes("submit", Json::object())).call) << "the version is optional";
  ASSERT_TRUE(parse_action(hermes("history", Json::object())).call);

  EXPECT_NE(parse_action(hermes("restore", {{"version", "two"}})).error.find("restore: argument 'version' must be an integer >= 1"),
            std::string::npos);
  EXPECT_NE(parse_action(hermes("restore", {{"version", 0}})).error.find("must be an integer >= 1"), std::string::npos);
  EXPECT_NE(parse_action(hermes("restore", {{"version", 1.5}})).error.find("must be an integer"), std::string::npos);
  EXPECT_NE(parse_action(hermes("restore", Json::object())).error.find("missing argument 'version'"), std::string::npos);
  EXPECT_NE(parse_action(hermes("diff", {{"a", 1}})).error.find("missing argument 'b'"), std::string::npos);
  EXPECT_NE(parse_action(hermes("history", {{"version", 1}})).error.find("it takes no arguments"), std::string::npos);

  EXPECT_EQ(tool_spec(Tool::history).lane, Lane::front);
  EXPECT_EQ(tool_spec(Tool::restore).lane, Lane::front);
  EXPECT_EQ(tool_spec(Tool::diff).lane, Lane::front);
  EXPECT_EQ(tool_spec(Tool::submit).lane, Lane::gpu);
  EXPECT_NE(tool_summary().find("- restore(version): "), std::string::npos) << tool_summary();
  EXPECT_NE(tool_summary().find("- diff(a, b): "), std::string::npos);
  EXPECT_NE(tool_summary().find("- submit(version): "), std::string::npos);
  EXPECT_EQ(tool_spec(Tool::diff).schema["function"]["parameters"]["properties"]["a"]["type"], "integer");
}

TEST(UnifiedDiff, ShowsChangedLinesWithContextAndLineNumbers) {
  std::string a = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\n15\n";
  std::string b = "1\n2\nthree\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n15\n16\n";
  EXPECT_EQ(unified_diff(a, b, "v1/kernel.cu", "v2/kernel.cu"),
            "--- v1/kernel.cu\n+++ v2/kernel.cu\n"
            "@@ -1,6 +1,6 @@\n 1\n 2\n-3\n+three\n 4\n 5\n 6\n"
            "@@ -11,5 +11,5 @@\n 11\n 12\n 13\n-14\n 15\n+16\n");
  EXPECT_EQ(unified_diff(a, a, "x", "y"), "");
  EXPECT_EQ(unified_diff("", "only\n", "x", "y"), "--- x\n+++ y\n@@ -0,0 +1,1 @@\n+only\n");
  // Changes closer than twice the context share one hunk.
  EXPECT_EQ(unified_diff("a\nb\nc\nd\ne\n", "A\nb\nc\nd\nE\n", "x", "y"), "--- x\n+++ y\n@@ -1,5 +1,5 @@\n-a\n+A\n b\n c\n d\n-e\n+E\n");
}

TEST_F(EpisodeTest, EveryJudgedCandidateIsAVersionThatHistoryRestoreAndDiffRead) {
  KernelEnv env(test_env_config(), RewardConfig{}, replay);
  env.reset(task_without_baselines(), 1);
  StepResult h0 = env.step(hermes("history", Json::object()));
  EXPECT_NE(h0.observation.find("no version yet"), std::string::npos) << h0.observation;
  EXPECT_EQ(h0.info["history"], Json::array());

  write_candidate(env, "gelu_scale_residual", "fused");
  env.step(call("compile"));  // compile() judges nothing on the GPU: no version
  replay.reports.push_back(pass_report(1.0, 3.2));
  StepResult v1 = env.step(call("profile"));
  EXPECT_EQ(v1.info["version"], 1);
  EXPECT_NE(v1.observation.find("(version v1)"), std::string::npos) << v1.observation;

  std::string broken = fused("kernel.cu") + "// v2: an experiment\n";
  env.step(write_call("kernel.cu", broken));
  env.step(write_call("notes.md", "v2 breaks it"));
  replay.reports.push_back(wrong_report());
  StepResult v2 = env.step(call("verify"));
  EXPECT_EQ(v2.info["version"], 2);

  StepResult h = env.step(hermes("history", Json::object()));
  EXPECT_TRUE(h.info["tool_ok"].get<bool>());
  EXPECT_NE(h.observation.find("v1  pass  speedup 3.200x [3.136, 3.264]"), std::string::npos) << h.observation;
  EXPECT_NE(h.observation.find("profile pass (turn 5)"), std::string::npos) << h.observation;
  EXPECT_NE(h.observation.find("v2  fail (not verified)  untimed  verify fail (turn 8)"), std::string::npos) << h.observation;
  ASSERT_EQ(h.info["history"].size(), 2u);
  EXPECT_EQ(h.info["history"][0]["speedup"]["point"], 3.2);
  EXPECT_TRUE(h.info["history"][0]["verified"].get<bool>());
  EXPECT_FALSE(h.info["history"][1]["verified"].get<bool>());
  EXPECT_FALSE(h.info["history"][0].contains("files")) << "step info lists versions without their files";

  StepResult d = env.step(hermes("diff", {{"a", 1}, {"b", "v2"}}));
  EXPECT_NE(d.observation.find("--- v1/kernel.cu\n+++ v2/kernel.cu\n"), std::string::npos) << d.observation;
  EXPECT_NE(d.observation.find("\n+// v2: an experiment\n"), std::string::npos) << d.observation;
  EXPECT_NE(d.observation.find("launch.yaml: unchanged"), std::string::npos) << d.observation;

  StepResult missing = env.step(hermes("restore", {{"version", 3}}));
  EXPECT_FALSE(missing.info["tool_ok"].get<bool>());
  EXPECT_NE(missing.observation.find("there is no version 3 (2 so far"), std::string::npos) << missing.observation;
  EXPECT_EQ(env.workspace().read("kernel.cu"), broken) << "a failed restore changes nothing";

  StepResult r = env.step(hermes("restore", {{"version", 1}}));
  EXPECT_TRUE(r.info["tool_ok"].get<bool>()) << r.observation;
  EXPECT_EQ(env.workspace().read("kernel.cu"), fused("kernel.cu"));
  EXPECT_EQ(env.workspace().read("launch.yaml"), fused("launch.yaml"));
  EXPECT_EQ(env.workspace().read("notes.md"), "v2 breaks it") << "notes are not part of a version";

  replay.reports.push_back(pass_report(1.0, 3.2));
  StepResult again = env.step(call("verify"));
  EXPECT_EQ(again.info["version"], 1) << "the same bytes are the same version";
  EXPECT_NE(again.observation.find("(version v1, judged before)"), std::string::npos) << again.observation;
  ASSERT_EQ(env.history().versions().size(), 2u);
  EXPECT_EQ(env.history().find(1)->judgings.size(), 2u);
  EXPECT_EQ(env.history().find(1)->speedup->point, 3.2) << "an untimed pass keeps the timed figures";
}

TEST_F(EpisodeTest, SubmitByVersionJudgesThatVersionsFilesAndLeavesTheWorkspace) {
  KernelEnv env(test_env_config(), RewardConfig{}, replay);
  env.reset(task_without_baselines(), 1);
  write_candidate(env, "gelu_scale_residual", "fused");
  replay.reports.push_back(pass_report(1.0, 3.2));
  env.step(call("profile"));
  env.step(write_call("kernel.cu", "// work in progress\n"));
  StepResult none = env.step(hermes("submit", {{"version", 9}}));
  EXPECT_FALSE(none.terminated) << "a version that does not exist is not a submission";
  EXPECT_NE(none.observation.find("there is no version 9"), std::string::npos);

  replay.reports.push_back(pass_report(1.0, 3.2));
  StepResult s = env.step(hermes("submit", {{"version", 1}}));
  EXPECT_TRUE(s.terminated);
  EXPECT_EQ(s.info["version"], 1);
  EXPECT_EQ(s.reward, 2) << s.info["reward"].dump(2);
  EXPECT_EQ(s.info["reward"]["version"], 1);
  EXPECT_EQ(s.info["reward"]["reward_from"], "last_submission");
  EXPECT_EQ(env.workspace().read("kernel.cu"), "// work in progress\n");
  ASSERT_EQ(s.info["history"].size(), 1u) << "the last step's info carries the history";
  EXPECT_EQ(s.info["history"][0]["judgings"].size(), 2u);
}

// choose_episode_reward with reward results the reward rules computed from real reports.
TEST(BestVersionReward, TakesTheBestVerifiedVersionOnlyUnderTheOptionAndNeverOverACheat) {
  RewardConfig rc;
  StoredBaseline none;
  auto reward_of = [&](const Json& report) { return submission_reward(rc, submission_outcome(parse_eval_report(report)), none); };
  RewardResult fast = reward_of(pass_report(1.0, 3.2));  // faster_than_eager: 2
  RewardResult slow = reward_of(pass_report(1.0, 1.0));  // correct: 1
  RewardResult wrong = reward_of(wrong_report());        // verify_fail: -1
  RewardResult cheat = reward_of(cheat_report("state_same_addresses"));
  ASSERT_EQ(fast.rule, "faster_than_eager");
  ASSERT_EQ(slow.rule, "correct");
  ASSERT_EQ(wrong.rule, "verify_fail");
  ASSERT_EQ(cheat.rule, "cheat");
  std::vector<VersionReward> verified = {{1, slow}, {2, fast}, {4, slow}};

  RewardResult last = choose_episode_reward(RewardFrom::last_submission, wrong, 3, verified);
  EXPECT_EQ(last.value, -1);
  EXPECT_EQ(last.evidence["version"], 3);
  EXPECT_EQ(last.evidence["reward_from"], "last_submission");
  EXPECT_FALSE(last.evidence.contains("last"));

  RewardResult best = choose_episode_reward(RewardFrom::best_verified, wrong, 3, verified);
  EXPECT_EQ(best.value, 2);
  EXPECT_EQ(best.rule, "faster_than_eager");
  EXPECT_EQ(best.evidence["version"], 2);
  EXPECT_EQ(best.evidence["last"]["rule"], "verify_fail");
  EXPECT_EQ(best.evidence["last"]["reward"], -1);
  EXPECT_EQ(best.evidence["eager"]["speedup"]["point"], 3.2) << "the evidence is the version's own";

  EXPECT_FALSE(best.evidence["last"].contains("eager")) << "a wrong submission has no speedup";
  RewardResult over_slow = choose_episode_reward(RewardFrom::best_verified, slow, 4, {{2, fast}});
  EXPECT_EQ(over_slow.evidence["last"]["eager"]["speedup"]["point"], 1.0) << "the submission's own speedup beside the best";
  EXPECT_EQ(over_slow.evidence["eager"]["speedup"]["point"], 3.2);

  RewardResult kept = choose_episode_reward(RewardFrom::best_verified, fast, 2, {{1, slow}});
  EXPECT_EQ(kept.value, 2);
  EXPECT_EQ(kept.evidence["version"], 2);
  EXPECT_FALSE(kept.evidence.contains("last")) << "a submission at least as good keeps its own reward";

  RewardResult tie = choose_episode_reward(RewardFrom::best_verified, wrong, std::nullopt, {{1, slow}, {4, slow}});
  EXPECT_EQ(tie.evidence["version"], 4) << "ties go to the later version";

  RewardResult caught = choose_episode_reward(RewardFrom::best_verified, cheat, 5, verified);
  EXPECT_EQ(caught.rule, "cheat") << "an earlier honest version never launders a cheat";
  EXPECT_EQ(caught.value, rc.failures.cheat);
  EXPECT_EQ(choose_episode_reward(RewardFrom::best_verified, wrong, 3, {}).value, -1) << "nothing verified: the last reward";
}

TEST_F(EpisodeTest, UnderBestVerifiedARegressedSubmissionEarnsTheBestVersionsReward) {
  for (RewardFrom mode : {RewardFrom::last_submission, RewardFrom::best_verified}) {
    SCOPED_TRACE(reward_from_name(mode));
    EnvConfig ec = test_env_config();
    ec.history.reward_from = mode;
    KernelEnv env(ec, RewardConfig{}, replay);
    env.reset(task_without_baselines(), 1);
    write_candidate(env, "gelu_scale_residual", "fused");
    replay.reports.push_back(pass_report(1.0, 3.2));
    env.step(call("profile"));  // v1: 3.2x, tier 2
    env.step(write_call("kernel.cu", fused("kernel.cu") + "// v2\n"));
    replay.reports.push_back(pass_report(3.2, 3.2));
    env.step(call("profile"));  // v2: correct, not faster
    env.step(write_call("kernel.cu", fused("kernel.cu") + "// v3\n"));
    replay.reports.push_back(wrong_report());
    if (mode == RewardFrom::best_verified) replay.reports.push_back(pass_report(1.0, 3.2));  // v1 judged again as a submission
    StepResult s = env.step(call("submit"));                                                 // v3 is wrong
    ASSERT_TRUE(s.terminated);
    EXPECT_TRUE(replay.reports.empty()) << "best_verified judged v1 again; last_submission judged nothing more";
    EXPECT_EQ(s.info["version"], 3);
    if (mode == RewardFrom::last_submission) {
      EXPECT_EQ(s.reward, -1) << s.info["reward"].dump(2);
      EXPECT_EQ(s.info["reward"]["rule"], "verify_fail");
    } else {
      EXPECT_EQ(s.reward, 2) << s.info["reward"].dump(2);
      EXPECT_EQ(s.info["reward"]["rule"], "faster_than_eager");
      EXPECT_EQ(s.info["reward"]["version"], 1);
      EXPECT_EQ(s.info["reward"]["last"]["rule"], "verify_fail");
      EXPECT_NE(s.observation.find("reward: 2 (faster_than_eager)"), std::string::npos) << s.observation;
      EXPECT_NE(s.observation.find("the reward of v1, the best verified version"), std::string::npos) << s.observation;
      EXPECT_EQ(s.info["reward"]["confirmation"]["rule"], "faster_than_eager");
      EXPECT_EQ(replay.candidates.back().dir, "v1");
    }
    EXPECT_EQ(s.info["episode_reward"], s.reward);
  }
}

TEST_F(EpisodeTest, UnderBestVerifiedATruncatedEpisodeEarnsTheBestVersionsRewardButAFailedVersionNone) {
  KernelEnv env(best_verified_config(), RewardConfig{}, replay);
  env.reset(task_without_baselines(), 1, {{"max_turns", 6}});
  write_candidate(env, "gelu_scale_residual", "fused");
  replay.reports.push_back(pass_report(1.0, 3.2));
  env.step(call("profile"));  // v1 passes ...
  replay.reports.push_back(fault_report());
  env.step(call("verify"));  // ... then faults: one failure disqualifies it
  EXPECT_FALSE(env.history().find(1)->verified());
  env.step(write_call("kernel.cu", fused("kernel.cu") + "// v2\n"));
  Json untimed = pass_report(1.0, 1.0);
  untimed["timing"] = nullptr;  // verify() does not time
  replay.reports.push_back(untimed);
  replay.reports.push_back(pass_report(1.0, 3.2));  // v2 judged again as a submission: timed, and faster than eager
  StepResult s = env.step(call("verify"));          // v2: verified, untimed; turn 6 truncates
  ASSERT_TRUE(s.truncated);
  EXPECT_EQ(s.reward, 1) << s.info["reward"].dump(2);
  EXPECT_EQ(s.info["reward"]["rule"], "correct_untimed") << "a version only verified counts as correct, untimed";
  EXPECT_EQ(s.info["reward"]["confirmation"]["rule"], "faster_than_eager") << "the confirmation never raises the reward";
  EXPECT_EQ(s.info["reward"]["version"], 2);
  EXPECT_EQ(s.info["reward"]["last"]["rule"], "no_submission");
  EXPECT_NE(s.observation.find("from v2, the best verified version"), std::string::npos) << s.observation;
}

TEST(HistoryConfig, ReadsRewardFromAndRefusesOtherValues) {
  EXPECT_EQ(EnvConfig{}.history.reward_from, RewardFrom::last_submission) << "CUDA Agent's last submission is the default";
  EXPECT_EQ(EnvConfig::from_yaml(YamlNode::parse("history: {reward_from: best_verified}\n", "env.yaml"), ".").history.reward_from,
            RewardFrom::best_verified);
  EXPECT_EQ(EnvConfig::load(source_dir() + "/configs/env.yaml").history.reward_from, RewardFrom::last_submission);
  try {
    EnvConfig::from_yaml(YamlNode::parse("history: {reward_from: best}\n", "env.yaml"), ".");
    FAIL() << "accepted reward_from: best";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("history.reward_from: 'best' is not last_submission or best_verified"), std::string::npos)
        << e.what();
  }
}

TEST(HistoryConfig, ThePromptSaysWhereTheRewardComesFrom) {
  TaskSpec task = task_without_baselines();
  std::string last = prompt_fields(task, "", test_env_config(), RewardConfig{})["reward"];
  std::string best = prompt_fields(task, "", best_verified_config(), RewardConfig{})["reward"];
  EXPECT_EQ(last.find("history()"), std::string::npos) << "the default prompt is CUDA Agent's";
  EXPECT_NE(best.find("Every candidate verify(), profile() or submit() judges is kept as a version (history())"), std::string::npos)
      << best;
  EXPECT_NE(best.find("a caught cheat still gets -1"), std::string::npos) << best;
}

// What a rollout server compiles ahead of a GPU step (scheduler.warm_compiles): the candidate the
// step will judge, the workspace's or submit's named version, and nothing for other steps.
TEST_F(EpisodeTest, TheCandidateAGpuStepWillJudgeIsKnownBeforeTheStep) {
  KernelEnv env(test_env_config(), RewardConfig{}, replay);
  EXPECT_FALSE(env.candidate_to_judge(parse_action(call("verify")))) << "no episode";
  env.reset(task_without_baselines(), 1);
  EXPECT_FALSE(env.candidate_to_judge(parse_action(call("verify")))) << "an empty workspace";
  write_candidate(env, "gelu_scale_residual", "fused");
  for (const char* tool : {"verify", "profile", "submit"}) {
    std::optional<Candidate> c = env.candidate_to_judge(parse_action(call(tool)));
    ASSERT_TRUE(c) << tool;
    EXPECT_EQ(c->source, fused("kernel.cu"));
  }
  EXPECT_FALSE(env.candidate_to_judge(parse_action(call("compile"))));
  EXPECT_FALSE(env.candidate_to_judge(parse_action(call("list_files"))));
  replay.reports.push_back(pass_report(1.0, 3.2));
  env.step(call("verify"));  // v1
  env.step(write_call("kernel.cu", "// work in progress\n"));
  std::optional<Candidate> v1 = env.candidate_to_judge(parse_action(hermes("submit", {{"version", 1}})));
  ASSERT_TRUE(v1);
  EXPECT_EQ(v1->source, fused("kernel.cu")) << "submit(version=1) judges v1's files, not the workspace's";
  EXPECT_EQ(v1->dir, "v1");
  EXPECT_EQ(env.candidate_to_judge(parse_action(call("verify")))->source, "// work in progress\n");
  EXPECT_FALSE(env.candidate_to_judge(parse_action(hermes("submit", {{"version", 7}})))) << "no such version";
}
