// Whole episodes on a GPU: a scripted policy per reward tier, a truncated episode and misbehaving
// policies, judged by the real evaluator and GPU worker. Measured on an H200 (speedup over eager):
// gelu_scale_residual/fused ~3.2x, linear_relu/tiled ~0.8x.
//
// The tier-2 test clears the task's baselines (tier 2 is then the top), and the tier-3 test gives the
// task a synthetic stored baseline (torch.compile exactly as fast as eager), so neither depends on
// what the sample file stores (tools/dataset/sample_baselines.py writes measured ones into it).
#include <cstdio>
#include <memory>
#include <set>

#include <gtest/gtest.h>

#include "configs/file_reader.h"
#include "configs/yaml_reader.h"
#include "env/cuda/cuda_probe.h"
#include "tests/env/episode/episode_fixtures.h"

using namespace kforge;
using namespace kforge::testing;

#define SKIP_WITHOUT_CUDA()                                                                                                 \
  do {                                                                                                                      \
    std::string why_;                                                                                                       \
    if (!cuda_device_present(&why_)) {                                                                                      \
      std::printf("KFORGE_SKIPPED: no CUDA device on this machine (%s); run on a GPU host (ctest -L gpu)\n", why_.c_str()); \
      GTEST_SKIP() << "no CUDA device: " << why_;                                                                           \
    }                                                                                                                       \
  } while (0)

namespace {

EvalConfig gpu_eval_config() {
  EvalConfig c;
  c.worker.arch = "";  // the GPU's own
  return c;
}

class EpisodeGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_CUDA();
    evaluator = std::make_unique<Evaluator>(gpu_eval_config());
    judge = std::make_unique<EvaluatorJudge>(*evaluator);
  }
  // Plays a shipped policy on its task to the end and returns its steps.
  std::vector<PlayedStep> run(const std::string& policy, const Json& options = Json::object(), RewardConfig reward = {},
                              std::optional<Baselines> baselines = std::nullopt) {
    ScriptedPolicy p = ScriptedPolicy::load(policy_dir(policy));
    TaskSpec task = load_task(sample_task(p.task()));
    if (baselines) task.baselines = *baselines;
    env = std::make_unique<KernelEnv>(test_env_config(), reward, *judge);
    Json opts = p.reset_options();
    opts.update(options);
    auto steps = play(*env, p, task, 42, opts);
    print_steps(policy, steps);
    return steps;
  }
  std::unique_ptr<Evaluator> evaluator;
  std::unique_ptr<EvaluatorJudge> judge;
  std::unique_ptr<KernelEnv> env;
};

const StepResult& last(const std::vector<PlayedStep>& steps) { return steps.back().result; }

}  // namespace

TEST_F(EpisodeGpuTest, TierMinusOneForACompileError) {
  auto steps = run("compile_error");
  ASSERT_FALSE(steps.empty());
  EXPECT_TRUE(last(steps).terminated);
  EXPECT_EQ(last(steps).reward, -1);
  EXPECT_EQ(last(steps).info["reward"]["rule"], "compile_error") << last(steps).info["reward"].dump(2);
  EXPECT_NE(steps[2].result.observation.find("b_frag"), std::string::npos) << steps[2].result.observation;
}

TEST_F(EpisodeGpuTest, TierMinusOneForWrongOutputs) {
  auto steps = run("partial_write");
  EXPECT_NE(steps[2].result.observation.find("verify: FAILED"), std::string::npos) << steps[2].result.observation;
  EXPECT_NE(steps[2].result.observation.find("never written"), std::string::npos) << steps[2].result.observation;
  EXPECT_TRUE(last(steps).terminated);
  EXPECT_EQ(last(steps).reward, -1);
  EXPECT_EQ(last(steps).info["reward"]["rule"], "verify_fail") << last(steps).info["reward"].dump(2);
}

TEST_F(EpisodeGpuTest, TheCheatingPenaltyForCheatsCaughtStaticallyAndDynamically) {
  RewardConfig rc;
  rc.failures.cheat = -3;  // below -1, so the rule that fired is visible in the number
  auto stat = run("cheat_static", Json::object(), rc);
  EXPECT_NE(stat[2].result.observation.find("anti-cheat check 'static'"), std::string::npos) << stat[2].result.observation;
  EXPECT_EQ(last(stat).reward, -3) << last(stat).info["reward"].dump(2);
  EXPECT_EQ(last(stat).info["reward"]["check"], "static");
  // The pointer cache is caught by verify() or by submit(), whichever draws reach the check first;
  // a submission whose first trial fails before the state trials run (issue 25) is still the caught
  // cheat: the penalty, naming the check that caught it, either way.
  auto dyn = run("cheat_pointer_cache", Json::object(), rc);
  const Json& rw = last(dyn).info["reward"];
  EXPECT_EQ(last(dyn).reward, -3) << rw.dump(2);
  EXPECT_EQ(rw["rule"], "cheat") << rw.dump(2);
  std::set<std::string> refused_by;  // the checks that refused it in the episode's evaluations
  for (const auto& s : dyn)
    if (s.result.info.value("verdict", Json()) == "cheat")
      refused_by.insert(s.result.info["report"]["anticheat"]["check"].get<std::string>());
  ASSERT_TRUE(rw.contains("check") && rw["check"].is_string()) << rw.dump(2);
  EXPECT_TRUE(refused_by.count(rw["check"].get<std::string>())) << rw.dump(2);
  EXPECT_NE(rw["check"], "static");
  if (last(dyn).info["verdict"] != "cheat") {
    ASSERT_TRUE(rw.contains("cheat_caught_earlier")) << rw.dump(2);
    EXPECT_EQ(rw["cheat_caught_earlier"]["tool"], "verify");
    EXPECT_TRUE(rw["cheat_caught_earlier"]["same_candidate"].get<bool>());
  }
  YamlNode expect = YamlNode::load_file(source_dir() + "/anticheat/corpus/pointer_cache/expect.yaml");
  EXPECT_TRUE(refused_by.count(expect.req<std::string>("check"))) << "refused by: " << Json(refused_by).dump();
  EXPECT_NE(last(dyn).observation.find("caught by the anti-cheat check"), std::string::npos) << last(dyn).observation;
}

TEST_F(EpisodeGpuTest, TierOneForACorrectCandidateSlowerThanEager) {
  auto steps = run("linear_relu_tiled");
  EXPECT_NE(steps[3].result.observation.find("verify: passed"), std::string::npos) << steps[3].result.observation;
  const StepResult& s = last(steps);
  EXPECT_TRUE(s.terminated);
  EXPECT_EQ(s.reward, 1) << s.info["reward"].dump(2);
  EXPECT_EQ(s.info["reward"]["rule"], "correct");
  EXPECT_LT(s.info["reward"]["eager"]["speedup"]["lo"].get<double>(), 1.05);
  EXPECT_GT(s.info["gpu_time_s"].get<double>(), 0.0);
}

TEST_F(EpisodeGpuTest, TierTwoForTheDemoPolicy) {
  auto steps = run("gelu_fused", Json::object(), RewardConfig{}, Baselines{});
  ASSERT_EQ(steps.size(), 7u);
  EXPECT_NE(steps[3].result.observation.find("compile: ok"), std::string::npos) << steps[3].result.observation;
  EXPECT_NE(steps[4].result.observation.find("verify: passed"), std::string::npos) << steps[4].result.observation;
  const StepResult& profile = steps[5].result;
  EXPECT_NE(profile.observation.find("speedup over eager: "), std::string::npos) << profile.observation;
  EXPECT_TRUE(profile.observation.find("profile:") != std::string::npos ||
              profile.observation.find("profiling unavailable") != std::string::npos)
      << profile.observation;
  // The demo asks profile(counters=true): the counters' values, or the stated reason they are unavailable.
  EXPECT_TRUE(profile.observation.find("hardware counters (") != std::string::npos ||
              profile.observation.find("hardware counters unavailable") != std::string::npos)
      << profile.observation;
  EXPECT_TRUE(steps[5].result.info["report"]["profile"].is_null() || !steps[5].result.info["report"]["profile"]["counters"].is_null());
  const StepResult& s = last(steps);
  EXPECT_TRUE(s.terminated);
  EXPECT_EQ(s.info["termination_reason"], "submitted");
  EXPECT_EQ(s.reward, 2) << s.info["reward"].dump(2);
  EXPECT_EQ(s.info["reward"]["rule"], "faster_than_eager");
  EXPECT_GT(s.info["reward"]["eager"]["speedup"]["lo"].get<double>(), 1.05);
  EXPECT_FALSE(s.info["reward"]["torch_compile"]["available"].get<bool>());
  // submit() verifies with the submit trials (the anti-cheat state checks may add their own).
  EXPECT_GE(s.info["report"]["verify"]["trials_run"].get<int>(), evaluator->config().verify.submit_trials);
}

TEST_F(EpisodeGpuTest, TierThreeWithAStoredTorchCompileBaseline) {
  Baselines b;
  b.eager_ms = 1.0;  // synthetic: torch.compile stored exactly as fast as eager (rescaled to now, so is it)
  b.compile_ms = 1.0;
  b.gpu = "synthetic";  // no GPU's name: another model's baseline, used only where the config rescales it
  b.method = "test";
  RewardConfig rescale;
  rescale.compile_baseline.other_gpu = OtherGpuBaseline::rescale;
  auto steps = run("gelu_fused", Json::object(), rescale, b);
  const StepResult& s = last(steps);
  EXPECT_EQ(s.reward, 3) << s.info["reward"].dump(2);
  EXPECT_EQ(s.info["reward"]["rule"], "faster_than_both");
  EXPECT_TRUE(s.info["reward"]["torch_compile"]["available"].get<bool>());
  EXPECT_NE(s.info["reward"]["torch_compile"].value("other_gpu", "").find("stored on synthetic"), std::string::npos)
      << s.info["reward"].dump(2);
  // By default another GPU model's baseline gives no tier 3 (issue 32), and the evidence says why.
  auto refused = run("gelu_fused", Json::object(), RewardConfig{}, b);
  EXPECT_EQ(last(refused).reward, 2) << last(refused).info["reward"].dump(2);
  EXPECT_NE(last(refused).info["reward"]["torch_compile"].value("why", "").find("measured on synthetic"), std::string::npos)
      << last(refused).info["reward"].dump(2);
  // The same candidate against a torch.compile ten times faster than eager stays at tier 2.
  b.compile_ms = 0.1;
  auto fast_compile = run("gelu_fused", Json::object(), rescale, b);
  EXPECT_EQ(last(fast_compile).reward, 2) << last(fast_compile).info["reward"].dump(2);
}

TEST_F(EpisodeGpuTest, AnEpisodeWithoutASubmissionIsTruncated) {
  auto steps = run("no_submit", {{"max_turns", 6}});
  ASSERT_EQ(steps.size(), 6u);
  const StepResult& s = last(steps);
  EXPECT_TRUE(s.truncated);
  EXPECT_FALSE(s.terminated);
  EXPECT_EQ(s.info["termination_reason"], "max_turns");
  EXPECT_EQ(s.reward, -1);
  EXPECT_EQ(s.info["reward"]["rule"], "no_submission");
}

TEST_F(EpisodeGpuTest, AMisbehavingPolicyCostsItsTurnsAndTheGpuWorkerSurvivesAFault) {
  auto steps = run("garbage", {{"max_turns", 20}});
  ASSERT_EQ(steps.size(), 20u);
  EXPECT_TRUE(last(steps).truncated);
  EXPECT_TRUE(env->workspace().files().empty());

  // A faulting kernel, then a correct one in the same episode: the worker restarts, the episode goes on.
  TaskSpec task = load_task(sample_task("gelu_scale_residual"));
  KernelEnv e(test_env_config(), RewardConfig{}, *judge);
  e.reset(task, 3);
  auto write = [&](const std::string& cand) {
    for (const char* f : {"kernel.cu", "launch.yaml"}) {
      e.step(Json{{"name", "write_file"},
                  {"arguments", {{"path", f}, {"content", read_file(candidate_file("gelu_scale_residual", cand, f))}}}});
    }
  };
  write("illegal_address");
  StepResult fault = e.step(Json{{"name", "verify"}});
  EXPECT_NE(fault.observation.find("error (runtime_error)"), std::string::npos) << fault.observation;
  EXPECT_TRUE(e.running());
  write("fused");
  StepResult ok = e.step(Json{{"name", "verify"}});
  EXPECT_NE(ok.observation.find("verify: passed"), std::string::npos) << ok.observation;
  StepResult s = e.step(Json("<tool_call>{\"name\": \"submit\", \"arguments\": {}}</tool_call>"));
  EXPECT_EQ(s.reward, 2) << s.info["reward"].dump(2);
}

// The extension kind in a whole episode (issue 28): CUDA Agent's workdir written file by file,
// built by compile(), judged by verify() and submit() like a kernel: correct and slower than eager
// (the shared-memory SGEMM against cuBLAS) earns tier 1, and the history keeps the extension's files.
TEST_F(EpisodeGpuTest, AnExtensionEpisodeEarnsItsTier) {
  auto steps = run("linear_relu_extension");
  ASSERT_GE(steps.size(), 6u);
  EXPECT_EQ(steps[3].result.info["report"]["compile"].value("ok", false), true) << steps[3].result.observation;
  EXPECT_NE(steps[4].result.observation.find("verify: passed"), std::string::npos) << steps[4].result.observation;
  EXPECT_TRUE(last(steps).terminated);
  EXPECT_EQ(last(steps).reward, 1) << last(steps).info["reward"].dump(2);
  ASSERT_EQ(env->history().versions().size(), 1u);
  EXPECT_EQ(env->history().versions()[0].files.kind, CandidateKind::extension);
  EXPECT_EQ(env->history().versions()[0].files.files.size(), 3u);
}
