// The reward rules on synthetic measurements: every tier, every failure, the tie at the threshold,
// huge variance, missing or partial torch.compile baselines, shaping, and the evidence.
#include "reward/episode_reward.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "configs/error.h"

using namespace kforge;
using V = SubmissionOutcome::Verdict;

namespace {

std::vector<double> constant(int n, double ms) { return std::vector<double>(n, ms); }

// A correct, timed submission: n samples each of the candidate and eager, every sample equal, so
// the interval is exactly [ratio, ratio].
SubmissionOutcome timed(double candidate_ms, double eager_ms, int n = 20) {
  SubmissionOutcome o;
  o.verdict = V::pass;
  o.candidate_ms = constant(n, candidate_ms);
  o.eager_ms = constant(n, eager_ms);
  return o;
}

// Samples spread over two orders of magnitude around the given median.
std::vector<double> noisy(double median_ms) {
  std::vector<double> v;
  for (double f : {0.05, 0.1, 0.2, 0.5, 1.0, 1.0, 2.0, 5.0, 10.0, 20.0, 0.07, 14.0}) v.push_back(median_ms * f);
  return v;
}

StoredBaseline baseline(double eager_ms, double compile_ms) {
  StoredBaseline b;
  b.eager_ms = eager_ms;
  b.compile_ms = compile_ms;
  b.gpu = "NVIDIA H200";
  return b;
}

}  // namespace

TEST(SubmissionReward, CompileErrorIsMinusOneWithItsReason) {
  SubmissionOutcome o;
  o.verdict = V::error;
  o.error_kind = "compile_error";
  o.compile_stage = true;
  o.reason = "kernel.cu(3): error: identifier \"b_frag\" is undefined";
  RewardResult r = submission_reward(RewardConfig{}, o, {});
  EXPECT_EQ(r.value, -1);
  EXPECT_EQ(r.rule, "compile_error");
  EXPECT_EQ(r.evidence["rule"], "compile_error");
  EXPECT_EQ(r.evidence["error_kind"], "compile_error");
  EXPECT_NE(r.evidence["reason"].get<std::string>().find("b_frag"), std::string::npos);
}

TEST(SubmissionReward, RunErrorAndWrongResultsAndCheatsHaveTheirOwnConfiguredValues) {
  RewardConfig c;
  c.failures.run_error = -1.5;
  c.failures.verify_fail = -2;
  c.failures.cheat = -10;
  SubmissionOutcome run;
  run.verdict = V::error;
  run.error_kind = "runtime_error";
  EXPECT_EQ(submission_reward(c, run, {}).value, -1.5);
  EXPECT_EQ(submission_reward(c, run, {}).rule, "run_error");
  SubmissionOutcome wrong;
  wrong.verdict = V::fail;
  wrong.reason = "out: 512 mismatches";
  EXPECT_EQ(submission_reward(c, wrong, {}).value, -2);
  EXPECT_EQ(submission_reward(c, wrong, {}).rule, "verify_fail");
  SubmissionOutcome cheat = timed(0.1, 10.0);  // fast, but caught: the timing must not matter
  cheat.verdict = V::cheat;
  cheat.cheat_check = "speed_of_light";
  RewardResult r = submission_reward(c, cheat, baseline(10, 10));
  EXPECT_EQ(r.value, -10);
  EXPECT_EQ(r.rule, "cheat");
  EXPECT_EQ(r.evidence["check"], "speed_of_light");
  EXPECT_FALSE(r.evidence.contains("eager"));
}

TEST(SubmissionReward, ACompileTimeoutCountsAsACompileError) {
  SubmissionOutcome o;
  o.verdict = V::error;
  o.error_kind = "timeout";
  o.compile_stage = true;
  EXPECT_EQ(submission_reward(RewardConfig{}, o, {}).rule, "compile_error");
  o.compile_stage = false;  // a kernel that hangs
  EXPECT_EQ(submission_reward(RewardConfig{}, o, {}).rule, "run_error");
}

TEST(SubmissionReward, CorrectButNotFasterIsOne) {
  RewardResult r = submission_reward(RewardConfig{}, timed(2.0, 1.0), baseline(1.0, 0.8));
  EXPECT_EQ(r.value, 1);
  EXPECT_EQ(r.rule, "correct");
  EXPECT_DOUBLE_EQ(r.evidence["eager"]["speedup"]["point"].get<double>(), 0.5);
  EXPECT_FALSE(r.evidence["eager"]["beats"].get<bool>());
}

TEST(SubmissionReward, FasterThanEagerOnlyIsTwo) {
  // 2x eager; torch.compile stored at a third of eager, so the candidate is 0.67x torch.compile.
  RewardResult r = submission_reward(RewardConfig{}, timed(1.0, 2.0), baseline(3.0, 1.0));
  EXPECT_EQ(r.value, 2);
  EXPECT_EQ(r.rule, "faster_than_eager");
  EXPECT_NEAR(r.evidence["torch_compile"]["speedup"]["point"].get<double>(), 2.0 / 3.0, 1e-12);
  EXPECT_FALSE(r.evidence["torch_compile"]["beats"].get<bool>());
}

TEST(SubmissionReward, FasterThanBothIsThree) {
  RewardResult r = submission_reward(RewardConfig{}, timed(1.0, 2.0), baseline(3.0, 2.4));
  EXPECT_EQ(r.value, 3);
  EXPECT_EQ(r.rule, "faster_than_both");
  EXPECT_NEAR(r.evidence["torch_compile"]["speedup"]["lo"].get<double>(), 1.6, 1e-12);
}

TEST(SubmissionReward, TorchCompileTimeIsRescaledByEagerNowOverEagerStored) {
  // Stored: eager 4 ms, compile 2 ms. Now eager runs in 2 ms (a faster GPU), so compile is 1 ms now;
  // the candidate at 0.9 ms beats it by 11 %: tier 3. Unscaled, 2 ms would have looked like 2.2x.
  RewardResult r = submission_reward(RewardConfig{}, timed(0.9, 2.0), baseline(4.0, 2.0));
  EXPECT_EQ(r.rule, "faster_than_both");
  EXPECT_DOUBLE_EQ(r.evidence["torch_compile"]["rescaled_ms"].get<double>(), 1.0);
  EXPECT_NEAR(r.evidence["torch_compile"]["speedup"]["point"].get<double>(), 1.0 / 0.9, 1e-12);
  // Now eager runs in 8 ms (slower machine): compile is 4 ms now, the candidate at 3.9 ms is only 2.6 %
  // faster: not tier 3.
  RewardResult slow = submission_reward(RewardConfig{}, timed(3.9, 8.0), baseline(4.0, 2.0));
  EXPECT_EQ(slow.rule, "faster_than_eager");
  EXPECT_DOUBLE_EQ(slow.evidence["torch_compile"]["rescaled_ms"].get<double>(), 4.0);
}

// Issue 32's GPU-model check: a baseline stored on another GPU model gives no tier 3 unless
// compile_baseline.other_gpu is rescale, which the evidence then states; the same model, or a model
// unknown on either side, is judged as before.
TEST(SubmissionReward, AnotherGpuModelsBaselineGivesNoTierThreeUnlessTheConfigRescalesIt) {
  SubmissionOutcome o = timed(1.0, 2.0);  // 2x eager, 1.6x the stored torch.compile
  o.device = "NVIDIA H100 80GB HBM3";
  RewardResult refused = submission_reward(RewardConfig{}, o, baseline(3.0, 2.4));
  EXPECT_EQ(refused.rule, "faster_than_eager");
  EXPECT_FALSE(refused.evidence["torch_compile"]["available"].get<bool>());
  const std::string why = refused.evidence["torch_compile"]["why"].get<std::string>();
  EXPECT_NE(why.find("measured on NVIDIA H200, and this judge runs on NVIDIA H100 80GB HBM3"), std::string::npos) << why;
  EXPECT_NE(why.find("compile_baseline.other_gpu: refuse"), std::string::npos) << why;
  RewardConfig as_eager;  // when_missing still decides what a refused baseline becomes
  as_eager.compile_baseline.when_missing = MissingCompileBaseline::as_eager;
  EXPECT_EQ(submission_reward(as_eager, o, baseline(3.0, 2.4)).rule, "faster_than_both");

  RewardConfig rescale;
  rescale.compile_baseline.other_gpu = OtherGpuBaseline::rescale;
  RewardResult r = submission_reward(rescale, o, baseline(3.0, 2.4));
  EXPECT_EQ(r.rule, "faster_than_both");
  const std::string note = r.evidence["torch_compile"]["other_gpu"].get<std::string>();
  EXPECT_NE(note.find("stored on NVIDIA H200, judged on NVIDIA H100 80GB HBM3"), std::string::npos) << note;

  o.device = "NVIDIA H200";
  RewardResult same = submission_reward(RewardConfig{}, o, baseline(3.0, 2.4));
  EXPECT_EQ(same.rule, "faster_than_both");
  EXPECT_FALSE(same.evidence["torch_compile"].contains("other_gpu"));
  o.device.clear();  // a judge that does not know its GPU cannot tell
  EXPECT_EQ(submission_reward(RewardConfig{}, o, baseline(3.0, 2.4)).rule, "faster_than_both");
  o.device = "NVIDIA H100 80GB HBM3";
  StoredBaseline unnamed = baseline(3.0, 2.4);
  unnamed.gpu.clear();
  EXPECT_EQ(submission_reward(RewardConfig{}, o, unnamed).rule, "faster_than_both");
}

TEST(SubmissionReward, ExactlyFivePercentFasterIsATieAndDoesNotClearTheThreshold) {
  RewardConfig point;
  point.decision.mode = DecisionMode::point_estimate;
  for (const RewardConfig& c : {RewardConfig{}, point}) {
    RewardResult tie = submission_reward(c, timed(1.0, 1.05), {});
    EXPECT_DOUBLE_EQ(tie.evidence["eager"]["statistic"].get<double>(), 1.05);
    EXPECT_EQ(tie.rule, "correct") << tie.evidence.dump();
    EXPECT_EQ(submission_reward(c, timed(1.0, 1.0500001), {}).rule, "faster_than_eager");
  }
  // The same tie against torch.compile: compile stored equal to eager stored, candidate 1.05x of both.
  EXPECT_EQ(submission_reward(RewardConfig{}, timed(1.0, 1.05), baseline(2.0, 2.0)).rule, "correct");
  // 1.2x eager, torch.compile stored at 0.875 of eager: 1.05x torch.compile at best.
  EXPECT_EQ(submission_reward(RewardConfig{}, timed(1.0, 1.2), baseline(2.0, 1.75)).rule, "faster_than_eager");
}

TEST(SubmissionReward, HugeVarianceDoesNotPayInCiModeButDoesInPointMode) {
  SubmissionOutcome o;
  o.verdict = V::pass;
  o.candidate_ms = noisy(1.0);
  o.eager_ms = noisy(1.5);  // point speedup 1.5x, but the samples spread over 400x
  RewardResult ci = submission_reward(RewardConfig{}, o, {});
  double lo = ci.evidence["eager"]["speedup"]["lo"].get<double>();
  double point = ci.evidence["eager"]["speedup"]["point"].get<double>();
  ASSERT_NEAR(point, 1.5, 1e-9);
  ASSERT_LT(lo, 1.05) << "the interval of such noisy samples must reach below 1.05";
  EXPECT_EQ(ci.rule, "correct");
  EXPECT_DOUBLE_EQ(ci.evidence["eager"]["statistic"].get<double>(), lo);
  RewardConfig pc;
  pc.decision.mode = DecisionMode::point_estimate;
  RewardResult pr = submission_reward(pc, o, {});
  EXPECT_EQ(pr.rule, "faster_than_eager");
  EXPECT_EQ(pr.evidence["mode"], "point_estimate");
}

TEST(SubmissionReward, MissingCompileBaselineCapsAtFasterThanEagerUnlessConfigured) {
  RewardResult r = submission_reward(RewardConfig{}, timed(1.0, 3.0), {});
  EXPECT_EQ(r.rule, "faster_than_eager");
  EXPECT_FALSE(r.evidence["torch_compile"]["available"].get<bool>());
  EXPECT_NE(r.evidence["torch_compile"]["why"].get<std::string>().find("no torch.compile time"), std::string::npos);
  RewardConfig as_eager;
  as_eager.compile_baseline.when_missing = MissingCompileBaseline::as_eager;
  EXPECT_EQ(submission_reward(as_eager, timed(1.0, 3.0), {}).rule, "faster_than_both");
}

TEST(SubmissionReward, CompileTimeWithoutStoredEagerTimeIsMissingUnlessUnscaledIsAllowed) {
  StoredBaseline b;
  b.compile_ms = 2.0;  // no eager time beside it
  RewardResult r = submission_reward(RewardConfig{}, timed(1.0, 3.0), b);
  EXPECT_EQ(r.rule, "faster_than_eager");
  EXPECT_NE(r.evidence["torch_compile"]["why"].get<std::string>().find("no eager time"), std::string::npos);
  RewardConfig unscaled;
  unscaled.compile_baseline.allow_unscaled = true;
  RewardResult u = submission_reward(unscaled, timed(1.0, 3.0), b);
  EXPECT_EQ(u.rule, "faster_than_both");  // 2 ms / 1 ms = 2x torch.compile
  EXPECT_NEAR(u.evidence["torch_compile"]["speedup"]["point"].get<double>(), 2.0, 1e-12);
  EXPECT_EQ(submission_reward(unscaled, timed(1.0, 3.0), StoredBaseline{std::nullopt, 1.02, ""}).rule, "faster_than_eager");
}

TEST(SubmissionReward, AnUntimedCorrectSubmissionEarnsTheCorrectTier) {
  SubmissionOutcome o;
  o.verdict = V::pass;
  RewardResult r = submission_reward(RewardConfig{}, o, baseline(1, 1));
  EXPECT_EQ(r.rule, "correct_untimed");
  EXPECT_EQ(r.value, 1);
  // Unusable samples (a failed measurement) are not a crash either.
  o.candidate_ms = constant(10, 1.0);
  o.eager_ms = constant(10, 2.0);
  o.eager_ms[3] = std::nan("");
  RewardResult bad = submission_reward(RewardConfig{}, o, {});
  EXPECT_EQ(bad.rule, "correct_untimed");
  EXPECT_NE(bad.evidence["why"].get<std::string>().find("unusable"), std::string::npos);
}

TEST(SubmissionReward, TooFewSamplesFallBackToTheEvaluatorsInterval) {
  SubmissionOutcome o = timed(1.0, 2.0, 3);
  SpeedupEstimate rep;
  rep.point = 2.0;
  rep.lo = 1.01;
  rep.hi = 3.0;
  rep.confidence = 0.95;
  rep.method = "bootstrap-bca";
  o.reported_speedup = rep;
  RewardResult r = submission_reward(RewardConfig{}, o, {});
  EXPECT_EQ(r.rule, "correct");  // lo 1.01 <= 1.05
  EXPECT_NE(r.evidence["eager"]["source"].get<std::string>().find("evaluator"), std::string::npos);
}

TEST(SubmissionReward, LogSpeedupShapingAddsOnTheDecidingStatisticAndIsClipped) {
  RewardConfig c;
  c.shaping.log_speedup_weight = 0.5;
  c.shaping.log_speedup_clip = 1.0;
  RewardResult r = submission_reward(c, timed(1.0, 2.0), {});
  EXPECT_NEAR(r.value, 2 + 0.5 * std::log(2.0), 1e-12);
  EXPECT_EQ(r.evidence["tier_reward"], 2);
  RewardResult big = submission_reward(c, timed(1.0, 100.0), {});
  EXPECT_NEAR(big.value, 2 + 0.5, 1e-12);  // ln 100 clipped to 1
  RewardResult slow = submission_reward(c, timed(4.0, 1.0), {});
  EXPECT_NEAR(slow.value, 1 - 0.5, 1e-12);  // ln 0.25 clipped to -1
}

TEST(SubmissionReward, TierValuesAreConfig) {
  RewardConfig c;
  c.tiers = {0.5, 1.0, 4.0};
  EXPECT_EQ(submission_reward(c, timed(1.0, 2.0), baseline(2, 1.5)).value, 4.0);
  EXPECT_EQ(submission_reward(c, timed(1.0, 2.0), {}).value, 1.0);
  EXPECT_EQ(submission_reward(c, timed(1.0, 1.0), {}).value, 0.5);
}

namespace {

EarlierCheat caught(const std::string& check, int turn, bool same_candidate) {
  EarlierCheat e;
  e.check = check;
  e.turn = turn;
  e.tool = "verify";
  e.same_candidate = same_candidate;
  return e;
}

RewardConfig harsh_cheat_penalty() {
  RewardConfig c;
  c.failures.cheat = -3;  // below every other failure, so the rule that fired shows in the number
  return c;
}

}  // namespace

TEST(SubmissionReward, ACheatCaughtEarlierIsPenalisedWhenAnotherSubmissionDoesNotPass) {
  RewardConfig c = harsh_cheat_penalty();
  SubmissionOutcome wrong;
  wrong.verdict = V::fail;
  wrong.reason = "out: 512 mismatches";
  SubmissionOutcome compile;
  compile.verdict = V::error;
  compile.error_kind = "compile_error";
  compile.compile_stage = true;
  SubmissionOutcome fault;
  fault.verdict = V::error;
  fault.error_kind = "runtime_error";
  for (SubmissionOutcome o : {wrong, compile, fault}) {
    o.earlier_cheat = caught("state_same_addresses", 3, /*same_candidate=*/false);
    RewardResult r = submission_reward(c, o, {});
    SCOPED_TRACE(r.evidence.dump());
    EXPECT_EQ(r.value, -3);
    EXPECT_EQ(r.rule, "cheat");
    EXPECT_EQ(r.evidence["verdict"], "cheat") << "reports count the episode as a cheat";
    EXPECT_EQ(r.evidence["submission_verdict"], verdict_name(o.verdict)) << "the submission's own verdict stays in the evidence";
    EXPECT_EQ(r.evidence["check"], "state_same_addresses");
    EXPECT_EQ(r.evidence["cheat_caught_earlier"]["check"], "state_same_addresses");
    EXPECT_EQ(r.evidence["cheat_caught_earlier"]["turn"], 3);
    EXPECT_EQ(r.evidence["cheat_caught_earlier"]["tool"], "verify");
    EXPECT_FALSE(r.evidence["cheat_caught_earlier"]["same_candidate"].get<bool>());
    EXPECT_NE(r.evidence["why"].get<std::string>().find("did not pass"), std::string::npos);
  }
}

TEST(SubmissionReward, TheCandidateCaughtEarlierIsPenalisedWhateverItScoresNow) {
  RewardConfig c = harsh_cheat_penalty();
  SubmissionOutcome passes = timed(0.5, 2.0);  // the dynamic checks missed it this time
  passes.earlier_cheat = caught("state_same_addresses", 3, /*same_candidate=*/true);
  RewardResult r = submission_reward(c, passes, baseline(2.0, 1.0));
  EXPECT_EQ(r.value, -3);
  EXPECT_EQ(r.rule, "cheat");
  EXPECT_EQ(r.evidence["verdict"], "cheat") << "never counted as correct";
  EXPECT_EQ(r.evidence["submission_verdict"], "pass");
  EXPECT_EQ(r.evidence["check"], "state_same_addresses");
  EXPECT_TRUE(r.evidence["cheat_caught_earlier"]["same_candidate"].get<bool>());
  EXPECT_FALSE(r.evidence.contains("eager")) << "a caught cheat's timing does not matter";

  SubmissionOutcome fails;  // issue 25: the first trial failed before the state trials ran
  fails.verdict = V::fail;
  fails.earlier_cheat = passes.earlier_cheat;
  EXPECT_EQ(submission_reward(c, fails, {}).rule, "cheat");
}

TEST(SubmissionReward, AnotherCandidateThatPassesAfterACaughtCheatIsJudgedOnItsMerit) {
  SubmissionOutcome o = timed(1.0, 2.0);
  o.earlier_cheat = caught("static", 2, /*same_candidate=*/false);
  RewardResult r = submission_reward(harsh_cheat_penalty(), o, baseline(3.0, 1.0));
  EXPECT_EQ(r.value, 2);
  EXPECT_EQ(r.rule, "faster_than_eager");
  EXPECT_FALSE(r.evidence.contains("cheat_caught_earlier"));
}

TEST(SubmissionReward, ASubmissionCaughtItselfNamesItsOwnCheck) {
  SubmissionOutcome o = timed(0.1, 10.0);
  o.verdict = V::cheat;
  o.cheat_check = "speed_of_light";
  o.earlier_cheat = caught("state_same_addresses", 3, /*same_candidate=*/true);
  RewardResult r = submission_reward(harsh_cheat_penalty(), o, {});
  EXPECT_EQ(r.value, -3);
  EXPECT_EQ(r.evidence["check"], "speed_of_light");
}

TEST(NoSubmissionReward, IsTheCheatingPenaltyAfterACaughtCheat) {
  RewardResult r = no_submission_reward(harsh_cheat_penalty(), "max_turns", caught("state_same_addresses", 3, false));
  EXPECT_EQ(r.value, -3);
  EXPECT_EQ(r.rule, "cheat");
  EXPECT_EQ(r.evidence["verdict"], "cheat");
  EXPECT_TRUE(r.evidence["submission_verdict"].is_null());
  EXPECT_EQ(r.evidence["check"], "state_same_addresses");
  EXPECT_EQ(r.evidence["cheat_caught_earlier"]["turn"], 3);
  EXPECT_NE(r.evidence["why"].get<std::string>().find("without a submission: max_turns"), std::string::npos);
}

TEST(NoSubmissionReward, IsTheConfiguredValueAndSaysWhy) {
  RewardConfig c;
  c.failures.no_submission = -0.5;
  RewardResult r = no_submission_reward(c, "max_turns");
  EXPECT_EQ(r.value, -0.5);
  EXPECT_EQ(r.rule, "no_submission");
  EXPECT_NE(r.evidence["why"].get<std::string>().find("max_turns"), std::string::npos);
}

TEST(TurnShaping, PaysFirstCompileAndFirstVerifyAndThePerTurnTerm) {
  ShapingConfig s;
  EXPECT_EQ(turn_shaping(s, true, true).value, 0);
  EXPECT_TRUE(turn_shaping(s, true, true).evidence.empty());
  s.per_turn = -0.01;
  s.first_compile = 0.1;
  s.first_verify = 0.2;
  EXPECT_NEAR(turn_shaping(s, false, false).value, -0.01, 1e-15);
  EXPECT_NEAR(turn_shaping(s, true, false).value, 0.09, 1e-15);
  TurnShaping both = turn_shaping(s, true, true);
  EXPECT_NEAR(both.value, 0.29, 1e-15);
  EXPECT_EQ(both.evidence.size(), 3u);
}

TEST(SubmissionReward, AKernelRightOnlyAtItsOwnShapeGetsThePenaltyHoweverFast) {
  SubmissionOutcome o = timed(0.5, 2.0);  // 4x over eager: faster_than_both when general
  o.shapes_status = "not_general";
  o.shapes = {{"status", "not_general"}, {"trials", {{{"dims", {{"B", 1}}}, {"verdict", "fail"}}}}};
  RewardConfig c;
  RewardResult r = submission_reward(c, o, baseline(2.0, 1.8));
  EXPECT_EQ(r.value, -1);
  EXPECT_EQ(r.rule, "not_general");
  EXPECT_EQ(r.evidence["verdict"], "pass");
  EXPECT_EQ(r.evidence["shapes"]["trials"][0]["verdict"], "fail");

  c.shapes.penalty = -0.5;
  EXPECT_EQ(submission_reward(c, o, baseline(2.0, 1.8)).value, -0.5);
  c.shapes.not_general = NotGeneral::reward;
  r = submission_reward(c, o, baseline(2.0, 1.8));
  EXPECT_EQ(r.value, 3);
  EXPECT_EQ(r.rule, "faster_than_both");
  EXPECT_EQ(r.evidence["shapes"]["status"], "not_general") << "the shapes stay in the evidence";

  o.shapes_status = "general";  // and a general one is judged on its speed
  o.shapes = {{"status", "general"}};
  EXPECT_EQ(submission_reward(RewardConfig{}, o, baseline(2.0, 1.8)).value, 3);
  o.shapes_status = "not_tested";  // untested shapes (the option off) change nothing
  EXPECT_EQ(submission_reward(RewardConfig{}, o, baseline(2.0, 1.8)).value, 3);
}
