// The episode's state machine without a GPU: reset and the prompt, the common info fields, tools
// on the workspace, compile() through the real compile worker (NVRTC runs on the CPU), limits that
// truncate (turns, wall clock, GPU time), policies that misbehave. verify/profile/submit reports
// come from the GPU worker, which this machine may not have: where a test needs one it replays a
// report written in the documented schema (env/evaluator/EVAL_REPORT.md) through ReplayJudge, which still
// compiles for real.
#include "env/episode/episode.h"

#include <gtest/gtest.h>

#include "configs/error.h"
#include "tests/env/episode/episode_replay.h"

using namespace kforge;
using namespace kforge::testing;

TEST_F(EpisodeTest, ResetGivesThePromptAndTheCommonInfo) {
  KernelEnv env(test_env_config(), RewardConfig{}, judge);
  ResetResult r = env.reset(load_task(sample_task("gelu_scale_residual")), 7);
  EXPECT_NE(r.observation.find("class Model(nn.Module)"), std::string::npos);
  EXPECT_NE(r.observation.find("| 0 | x | input | [32768, 8192] | float32 |"), std::string::npos);
  EXPECT_NE(r.observation.find("launch.yaml"), std::string::npos);
  EXPECT_EQ(r.info["task"], "gelu_scale_residual");
  EXPECT_EQ(r.info["seed"], 7);
  EXPECT_EQ(r.info["turn"], 0);
  EXPECT_EQ(r.info["max_turns"], 24);
  EXPECT_TRUE(r.info["termination_reason"].is_null());
  EXPECT_EQ(r.info["tools"].size(), tool_table().size());
  EXPECT_TRUE(env.running());
}

TEST_F(EpisodeTest, StepBeforeResetOrAfterTheEndIsAUsageError) {
  KernelEnv env(test_env_config(), RewardConfig{}, judge);
  try {
    env.step(call("list_files"));
    FAIL();
  } catch (const kforge::Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
  }
  env.reset(load_task(sample_task("gelu_scale_residual")), 1, {{"max_turns", 1}});
  EXPECT_TRUE(env.step(call("list_files")).truncated);
  try {
    env.step(call("list_files"));
    FAIL();
  } catch (const kforge::Error& e) {
    EXPECT_NE(std::string(e.what()).find("the episode is over (max_turns)"), std::string::npos);
  }
}

TEST_F(EpisodeTest, ResetOptionsAreCheckedAndSeedTheWorkspace) {
  KernelEnv env(test_env_config(), RewardConfig{}, judge);
  TaskSpec t = load_task(sample_task("gelu_scale_residual"));
  EXPECT_THROW(env.reset(t, 1, {{"max_turn", 3}}), kforge::Error);
  EXPECT_THROW(env.reset(t, 1, {{"files", {{"../x.cu", "a"}}}}), kforge::Error);
  env.reset(t, 1, {{"files", {{"kernel.cu", "// mine"}}}});
  StepResult s = env.step(call("list_files"));
  EXPECT_NE(s.observation.find("kernel.cu  7 bytes"), std::string::npos) << s.observation;
  // A new episode starts with an empty workspace.
  env.reset(t, 2);
  EXPECT_NE(env.step(call("list_files")).observation.find("the workspace is empty"), std::string::npos);
}

TEST_F(EpisodeTest, FilesAreWrittenReadAndListed) {
  KernelEnv env(test_env_config(), RewardConfig{}, judge);
  env.reset(load_task(sample_task("gelu_scale_residual")), 1);
  StepResult w = env.step(write_call("notes/plan.md", "float4 loads"));
  EXPECT_NE(w.observation.find("wrote notes/plan.md (12 bytes)"), std::string::npos) << w.observation;
  EXPECT_EQ(w.info["turn"], 1);
  EXPECT_EQ(w.reward, 0);
  EXPECT_FALSE(w.terminated || w.truncated);
  StepResult r = env.step(Json("<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"notes/plan.md\"}}</tool_call>"));
  EXPECT_EQ(r.observation, "float4 loads");
  StepResult missing = env.step(Json{{"name", "read_file"}, {"arguments", {{"path", "kernel.cu"}}}});
  EXPECT_FALSE(missing.info["tool_ok"].get<bool>());
  EXPECT_NE(missing.observation.find("no file kernel.cu"), std::string::npos);
  StepResult escape = env.step(write_call("../../etc/passwd", "x"));
  EXPECT_NE(escape.observation.find("write_file refused: '../../etc/passwd' leaves the workspace"), std::string::npos);
  EXPECT_EQ(env.workspace().files().size(), 1u);
  EXPECT_EQ(escape.info["turn"], 4);
}

TEST_F(EpisodeTest, CompileReportsResourcesAndPaysTheFirstCompileOnce) {
  RewardConfig rc;
  rc.shaping.first_compile = 0.25;
  KernelEnv env(test_env_config(), rc, judge);
  env.reset(load_task(sample_task("gelu_scale_residual")), 1);
  StepResult none = env.step(call("compile"));
  EXPECT_NE(none.observation.find("compile: the workspace has no kernel.cu and no launch.yaml"), std::string::npos);
  EXPECT_EQ(none.reward, 0);
  write_candidate(env, "gelu_scale_residual", "fused");
  StepResult c = env.step(call("compile"));
  EXPECT_NE(c.observation.find("compile: ok (sm_90a"), std::string::npos) << c.observation;
  EXPECT_NE(c.observation.find("registers"), std::string::npos);
  EXPECT_NE(c.observation.find("launch plan: 1 launch(es)"), std::string::npos) << c.observation;
  EXPECT_EQ(c.info["verdict"], "checked");
  EXPECT_EQ(c.reward, 0.25);
  EXPECT_EQ(c.info["shaping"]["first_compile"], 0.25);
  EXPECT_EQ(c.info["gpu_time_s"], 0.0) << "compiling uses no GPU time";
  StepResult again = env.step(call("compile"));
  EXPECT_EQ(again.reward, 0) << "only the first successful compile is paid";
}

TEST_F(EpisodeTest, ACompileErrorShowsTheCompilersMessage) {
  KernelEnv env(test_env_config(), RewardConfig{}, judge);
  env.reset(load_task(sample_task("linear_relu")), 1);
  write_candidate(env, "linear_relu", "compile_error");
  StepResult c = env.step(call("compile"));
  EXPECT_NE(c.observation.find("compile: FAILED"), std::string::npos) << c.observation;
  EXPECT_NE(c.observation.find("error (compile_error)"), std::string::npos);
  EXPECT_NE(c.observation.find("b_frag"), std::string::npos) << c.observation;
  EXPECT_TRUE(env.running());
}

TEST_F(EpisodeTest, ALaunchPlanErrorNamesItsLine) {
  KernelEnv env(test_env_config(), RewardConfig{}, judge);
  env.reset(load_task(sample_task("gelu_scale_residual")), 1);
  write_candidate(env, "gelu_scale_residual", "fused");
  env.step(write_call("launch.yaml", "launches:\n  - kernel: no_such_kernel\n    grid: [1]\n    block: [32]\n    args: []\n"));
  StepResult c = env.step(call("compile"));
  EXPECT_NE(c.observation.find("compile: FAILED"), std::string::npos) << c.observation;
  EXPECT_NE(c.observation.find("launch.yaml:2"), std::string::npos) << c.observation;
}

TEST_F(EpisodeTest, LongCompilerOutputIsTrimmedToTheObservationBudget) {
  EnvConfig ec = test_env_config();
  ec.limits.observation_max_chars = 600;
  KernelEnv env(ec, RewardConfig{}, judge);
  env.reset(load_task(sample_task("gelu_scale_residual")), 1);
  write_candidate(env, "gelu_scale_residual", "fused");
  std::string noisy;
  for (int i = 0; i < 200; ++i) noisy += "int unused_" + std::to_string(i) + " = undefined_symbol_" + std::to_string(i) + ";\n";
  env.step(write_call("kernel.cu", "extern \"C\" __global__ void k(float* y) {\n" + noisy + "}\n"));
  StepResult c = env.step(call("compile"));
  EXPECT_LE(c.observation.size(), 600u);
  EXPECT_NE(c.observation.find("characters cut ...]"), std::string::npos) << c.observation;
  EXPECT_NE(c.observation.find("compile: FAILED"), std::string::npos) << "the head survives";
}

TEST_F(EpisodeTest, TheTurnLimitTruncatesWithTheNoSubmissionReward) {
  RewardConfig rc;
  rc.failures.no_submission = -0.75;
  KernelEnv env(test_env_config(), rc, judge);
  env.reset(load_task(sample_task("gelu_scale_residual")), 1, {{"max_turns", 3}});
  StepResult a = env.step(call("list_files"));
  StepResult b = env.step(Json("no tool call here"));
  EXPECT_FALSE(a.truncated || b.truncated);
  StepResult c = env.step(call("list_files"));
  EXPECT_TRUE(c.truncated);
  EXPECT_FALSE(c.terminated);
  EXPECT_EQ(c.reward, -0.75);
  EXPECT_EQ(c.info["termination_reason"], "max_turns");
  EXPECT_EQ(c.info["reward"]["rule"], "no_submission");
  EXPECT_EQ(c.info["episode_reward"], -0.75);
  EXPECT_NE(c.observation.find("the episode ended: max_turns reached without a submission"), std::string::npos);
  EXPECT_FALSE(env.running());
  EXPECT_EQ(env.termination_reason(), "max_turns");
}

TEST_F(EpisodeTest, GarbageCostsATurnNeverTheEpisode) {
  ScriptedPolicy garbage = ScriptedPolicy::load(policy_dir("garbage"));
  const int n = static_cast<int>(garbage.actions().size());
  KernelEnv env(test_env_config(), RewardConfig{}, judge);
  auto steps = play(env, garbage, load_task(sample_task("gelu_scale_residual")), 1, {{"max_turns", n + 3}});
  ASSERT_EQ(static_cast<int>(steps.size()), n + 3) << "the policy loops until the turn limit";
  int parse_errors = 0, refused = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    const StepResult& s = steps[i].result;
    SCOPED_TRACE(steps[i].action.dump().substr(0, 200) + " -> " + s.observation.substr(0, 300));
    EXPECT_EQ(s.info["turn"], static_cast<int>(i) + 1);
    EXPECT_FALSE(s.terminated);
    EXPECT_EQ(s.truncated, i + 1 == steps.size());
    EXPECT_FALSE(s.observation.empty());
    if (!s.info["action_error"].is_null()) {
      ++parse_errors;
      EXPECT_EQ(s.observation.rfind("error: ", 0), 0u);
    }
    if (s.observation.find("write_file refused") != std::string::npos) ++refused;
  }
  EXPECT_GE(parse_errors, 9);
  EXPECT_GE(refused, 3) << "path escapes, absolute paths and a shell script";
  EXPECT_TRUE(env.workspace().files().empty()) << "nothing the garbage policy wrote was stored";
  EXPECT_EQ(steps.back().result.info["termination_reason"], "max_turns");
  EXPECT_EQ(steps.back().result.reward, -1);
}

TEST_F(EpisodeTest, EndlessCompilesAreStoppedAndTheWallClockTruncates) {
  EvalConfig cfg = test_eval_config();
  cfg.worker.compile_timeout_s = 2;
  Evaluator ev(cfg);
  EvaluatorJudge j(ev);
  EnvConfig ec = test_env_config();
  ec.limits.wall_clock_s = 3;
  KernelEnv env(ec, RewardConfig{}, j);
  ScriptedPolicy endless = ScriptedPolicy::load(policy_dir("endless_compile"));
  auto steps = play(env, endless, load_task(sample_task("linear_relu")));
  ASSERT_GE(steps.size(), 3u);
  ASSERT_LE(steps.size(), 5u) << "two compiles of 2 s exceed a 3 s budget";
  const StepResult& first_compile = steps[2].result;
  EXPECT_NE(first_compile.observation.find("error (timeout)"), std::string::npos) << first_compile.observation;
  const StepResult& last = steps.back().result;
  EXPECT_TRUE(last.truncated);
  EXPECT_EQ(last.info["termination_reason"], "wall_clock_budget");
  EXPECT_GE(last.info["elapsed_s"].get<double>(), 3.0);
  EXPECT_EQ(last.reward, -1);
}

TEST_F(EpisodeTest, CompileNamesTheStaticAntiCheatCheckThatRefusedTheSource) {
  ScriptedPolicy p = ScriptedPolicy::load(policy_dir("cheat_static"));
  KernelEnv env(test_env_config(), RewardConfig{}, judge);
  env.reset(load_task(sample_task(p.task())), 1);
  for (int i = 0; i < 3; ++i) env.step(*p.next());
  // The third turn compiled; look at it again through a fresh compile.
  StepResult c = env.step(call("compile"));
  EXPECT_NE(c.observation.find("cheat: refused by the anti-cheat check 'static'"), std::string::npos) << c.observation;
  EXPECT_EQ(c.info["verdict"], "cheat");
  EXPECT_TRUE(env.running());
}

TEST_F(EpisodeTest, SubmitWithoutACandidateEndsAsACompileError) {
  KernelEnv env(test_env_config(), RewardConfig{}, judge);
  env.reset(load_task(sample_task("gelu_scale_residual")), 1);
  StepResult s = env.step(call("submit"));
  EXPECT_TRUE(s.terminated);
  EXPECT_EQ(s.reward, -1);
  EXPECT_EQ(s.info["reward"]["rule"], "compile_error");
  EXPECT_EQ(s.info["termination_reason"], "submitted");
  EXPECT_NE(s.observation.find("reward: -1 (compile_error)"), std::string::npos) << s.observation;
}

TEST_F(EpisodeTest, VerifyWithoutAGpuIsAnObservationNotACrash) {
  // On a GPU host this verifies for real; on a CPU machine the GPU worker cannot start. Either way
  // the episode goes on.
  KernelEnv env(test_env_config(), RewardConfig{}, judge);
  env.reset(load_task(sample_task("gelu_scale_residual")), 1);
  write_candidate(env, "gelu_scale_residual", "fused");
  StepResult v = env.step(call("verify"));
  EXPECT_TRUE(v.observation.find("verify: passed") != std::string::npos || v.observation.find("error (worker_crashed)") == 0)
      << v.observation;
  EXPECT_TRUE(env.running());
  EXPECT_FALSE(v.terminated || v.truncated);
}

TEST_F(EpisodeTest, SubmitRewardsFromTheFinalReportWithEvidence) {
  KernelEnv env(test_env_config(), RewardConfig{}, replay);
  TaskSpec t = load_task(sample_task("gelu_scale_residual"));
  t.baselines = Baselines{};  // a task without a torch.compile time, whatever the sample file stores
  env.reset(t, 1);
  write_candidate(env, "gelu_scale_residual", "fused");
  replay.reports.push_back(pass_report(1.0, 3.2));
  StepResult s = env.step(call("submit"));
  EXPECT_TRUE(s.terminated);
  EXPECT_EQ(s.reward, 2);
  EXPECT_EQ(s.info["reward"]["rule"], "faster_than_eager");
  EXPECT_FALSE(s.info["reward"]["torch_compile"]["available"].get<bool>());
  EXPECT_NEAR(s.info["reward"]["eager"]["speedup"]["point"].get<double>(), 3.2, 1e-9);
  EXPECT_NE(s.observation.find("reward: 2 (faster_than_eager)"), std::string::npos) << s.observation;
  EXPECT_NE(s.observation.find("this task stores no torch.compile time"), std::string::npos) << s.observation;
  ASSERT_EQ(replay.options.size(), 1u);
  EXPECT_EQ(replay.options[0].trials, evaluator.config().verify.submit_trials);
  EXPECT_TRUE(replay.options[0].time);
  EXPECT_NE(replay.options[0].salt, 0u) << "a hidden salt, derived from the seed";
  EXPECT_DOUBLE_EQ(s.info["gpu_time_s"].get<double>(), 0.5);

  // With a stored torch.compile baseline the same measurements reach tier 3.
  t.baselines.eager_ms = 10.0;
  t.baselines.compile_ms = 8.0;  // 3.2x eager is 2.56x torch.compile
  t.baselines.gpu = "NVIDIA H200";
  t.baselines.method = "synthetic";
  env.reset(t, 2);
  write_candidate(env, "gelu_scale_residual", "fused");
  replay.reports.push_back(pass_report(1.0, 3.2));
  StepResult three = env.step(call("submit"));
  EXPECT_EQ(three.reward, 3);
  EXPECT_EQ(three.info["reward"]["rule"], "faster_than_both");
  EXPECT_NE(replay.options[1].salt, replay.options[0].salt) << "another seed, other inputs";
}

TEST_F(EpisodeTest, ACheatIsPenalisedAndTheCheckIsNamed) {
  RewardConfig rc;
  rc.failures.cheat = -5;
  KernelEnv env(test_env_config(), rc, replay);
  env.reset(load_task(sample_task("gelu_scale_residual")), 1);
  write_candidate(env, "gelu_scale_residual", "fused");
  Json cheat = pass_report(0.01, 3.2);
  cheat["verdict"] = "cheat";
  cheat["anticheat"] = cheat_section("speed_of_light", "faster than the DRAM bandwidth allows");
  replay.reports.push_back(cheat);
  Json cheat2 = cheat;
  cheat2["verdict"] = "pass";  // an anti-cheat finding counts even where the verdict says pass
  replay.reports.push_back(cheat2);
  StepResult v = env.step(call("verify"));
  EXPECT_NE(v.observation.find("cheat: refused by the anti-cheat check 'speed_of_light'"), std::string::npos) << v.observation;
  EXPECT_EQ(v.info["verdict"], "cheat");
  StepResult s = env.step(call("submit"));
  EXPECT_EQ(s.reward, -5);
  EXPECT_EQ(s.info["reward"]["rule"], "cheat");
  EXPECT_EQ(s.info["reward"]["check"], "speed_of_light");
  EXPECT_NE(s.observation.find("caught by the anti-cheat check 'speed_of_light'"), std::string::npos) << s.observation;
}

TEST_F(EpisodeTest, WrongAndFaultingSubmissionsAreMinusOne) {
  KernelEnv env(test_env_config(), RewardConfig{}, replay);
  TaskSpec t = load_task(sample_task("gelu_scale_residual"));
  Json wrong = wrong_report();
  Json fault = fault_report();
  for (const Json& report : {wrong, fault}) {
    env.reset(t, 1);
    write_candidate(env, "gelu_scale_residual", "fused");
    replay.reports.push_back(report);
    replay.reports.push_back(report);
    StepResult v = env.step(call("verify"));
    StepResult s = env.step(call("submit"));
    EXPECT_EQ(s.reward, -1);
    EXPECT_TRUE(s.terminated);
    if (report["verdict"] == "fail") {
      EXPECT_NE(v.observation.find("verify: FAILED in trial 0: out: 134217728 elements never written"), std::string::npos) << v.observation;
      EXPECT_NE(v.observation.find("yours \"nan\", reference 0.5"), std::string::npos) << v.observation;
      EXPECT_EQ(s.info["reward"]["rule"], "verify_fail");
    } else {
      EXPECT_NE(v.observation.find("error (runtime_error): an illegal memory access"), std::string::npos) << v.observation;
      EXPECT_EQ(s.info["reward"]["rule"], "run_error");
    }
  }
}

TEST_F(EpisodeTest, ProfileShowsTimingAndTheProfileSectionOrSaysItIsUnavailable) {
  KernelEnv env(test_env_config(), RewardConfig{}, replay);
  TaskSpec t = load_task(sample_task("gelu_scale_residual"));
  t.baselines.eager_ms = 4.0;
  t.baselines.compile_ms = 2.0;
  env.reset(t, 1);
  write_candidate(env, "gelu_scale_residual", "fused");
  replay.reports.push_back(pass_report(1.0, 3.0));
  StepResult plain = env.step(call("profile"));
  EXPECT_NE(plain.observation.find("speedup over eager: 3.000x"), std::string::npos) << plain.observation;
  EXPECT_NE(plain.observation.find("rescaled to now): 1.5000 ms; speedup over torch.compile 1.500x"), std::string::npos)
      << plain.observation;
  EXPECT_NE(plain.observation.find("profiling unavailable"), std::string::npos);
  EXPECT_TRUE(replay.options[0].time);
  EXPECT_EQ(replay.options[0].trials, evaluator.config().verify.trials);
  EXPECT_TRUE(replay.options[0].profile);
  EXPECT_FALSE(replay.options[0].counters) << "tools.profile_counters: asked, and this profile() did not ask";
  EXPECT_TRUE(replay.options[0].counter_metrics.empty()) << "tools.profile_metrics: the worker's default list";

  Json rep = pass_report(1.0, 3.0);
  rep["profile"] = {
      {"kernels", Json::array({{{"name", "gelu_fused"},
                                {"duration_ns", 987654},
                                {"grid", {65536, 1, 1}},
                                {"block", {256, 1, 1}},
                                {"registers", 30},
                                {"shared_bytes", 0},
                                {"static_shared_bytes", 0},
                                {"dynamic_shared_bytes", 0},
                                {"local_bytes_per_thread", 0},
                                {"device_launched", false},
                                {"blocks_per_sm", 8},
                                {"stream", 13},
                                {"occupancy", 0.75}}})},
      {"span_ns", 987654},
      {"kernel_time_ns", 987654},
      {"ceilings", {{"dram_gbps", 4000.0}, {"fp32_tflops", 60.0}, {"tf32_tflops", 400.0}, {"fp16_tflops", 700.0}, {"method", "m"}}},
      {"achieved", {{"gbps", 2200.0}, {"dram_fraction", 0.55}, {"basis", "b"}, {"tflops", 0.8}, {"fp32_fraction", 0.8 / 60}}},
      {"counters", {{"unavailable", "CUPTI profiling API: insufficient privileges"}}}};
  replay.reports.push_back(rep);
  StepResult p = env.step({{"name", "profile"}, {"arguments", {{"counters", true}}}});
  EXPECT_TRUE(replay.options[1].counters) << "profile(counters=true) asks";
  EXPECT_NE(p.observation.find("kernel gelu_fused: 0.9877 ms, grid [65536, 1, 1], block [256, 1, 1], 30 registers"), std::string::npos)
      << p.observation;
  EXPECT_NE(p.observation.find("occupancy 75 %"), std::string::npos);
  EXPECT_NE(p.observation.find("2200.0 GB/s of 4000 GB/s DRAM (55.0 %)"), std::string::npos) << p.observation;
  EXPECT_NE(p.observation.find("hardware counters unavailable: CUPTI profiling API: insufficient privileges"), std::string::npos);
  EXPECT_EQ(replay.options[1].salt, replay.options[0].salt) << "one salt per episode; trial identities are the GPU worker's own";
  EXPECT_NE(replay.options[1].salt, 0u) << "the policy never gets reproducible draws";

  // Counters the range profiler collected: one line per kernel with its metrics.
  Json counted = rep;
  counted["profile"]["counters"] = {
      {"metrics", {"gpu__time_duration.sum", "dram__bytes_read.sum"}},
      {"unsupported", Json::array()},
      {"replay", "user"},
      {"calls", 2},
      {"ms", {{"setup", 1.0}, {"collect", 2.0}, {"evaluate", 3.0}}},
      {"setup_cached", false},
      {"method", "CUPTI range profiler"},
      {"passes", 2},
      {"kernels", Json::array({{{"range", "gelu_fused"},
                                {"metrics", {{"gpu__time_duration.sum", 612345.0}, {"dram__bytes_read.sum", 1073741824.0}}}}})}};
  replay.reports.push_back(counted);
  StepResult pc = env.step(Json{{"name", "profile"}, {"arguments", {{"counters", "true"}}}});
  EXPECT_TRUE(replay.options[2].counters) << "a quoted true, as models write it";
  EXPECT_NE(pc.observation.find("hardware counters (2 replay pass(es)):"), std::string::npos) << pc.observation;
  EXPECT_NE(pc.observation.find("gelu_fused: dram__bytes_read.sum 1073741824.0 gpu__time_duration.sum 612345.0"), std::string::npos)
      << pc.observation;

  Json off = pass_report(1.0, 3.0);
  off["profile"] = {{"kernels", Json::array()},
                    {"unavailable", "CUPTI could not be initialised"},
                    {"counters", {{"unavailable", "CUPTI could not be initialised"}}}};
  replay.reports.push_back(off);
  EXPECT_NE(env.step(call("profile")).observation.find("profiling unavailable: CUPTI could not be initialised"), std::string::npos);

  // tools.profile_metrics reaches the evaluation options of profile(), and only of profile().
  EnvConfig ec = test_env_config();
  ec.tools.profile_metrics = {"dram__bytes_read.sum", "lts__t_sector_hit_rate.pct"};
  KernelEnv chosen(ec, RewardConfig{}, replay);
  chosen.reset(t, 2);
  write_candidate(chosen, "gelu_scale_residual", "fused");
  replay.reports.push_back(pass_report(1.0, 3.0));
  replay.reports.push_back(pass_report(1.0, 3.0));
  chosen.step(call("profile"));
  EXPECT_EQ(replay.options.back().counter_metrics, ec.tools.profile_metrics);
  chosen.step(call("verify"));
  EXPECT_TRUE(replay.options.back().counter_metrics.empty());
  EXPECT_FALSE(replay.options.back().counters);

  // tools.profile_counters: always reads them unasked; never does not, and says so when asked.
  for (CountersWhen when : {CountersWhen::always, CountersWhen::never}) {
    SCOPED_TRACE(profile_counters_name(when));
    ec.tools.profile_counters = when;
    KernelEnv e(ec, RewardConfig{}, replay);
    e.reset(t, 3);
    write_candidate(e, "gelu_scale_residual", "fused");
    replay.reports.push_back(rep);
    StepResult s = e.step(when == CountersWhen::always ? call("profile") : Json{{"name", "profile"}, {"arguments", {{"counters", true}}}});
    EXPECT_EQ(replay.options.back().counters, when == CountersWhen::always);
    if (when == CountersWhen::never)
      EXPECT_NE(s.observation.find("hardware counters: not read in this environment (tools.profile_counters: never)"), std::string::npos)
          << s.observation;
  }
  replay.reports.push_back(rep);
  StepResult unasked = env.step(call("profile"));
  EXPECT_NE(unasked.observation.find("hardware counters: not read; profile(counters=true) reads them"), std::string::npos)
      << unasked.observation;
  EXPECT_EQ(unasked.observation.find("hardware counters unavailable"), std::string::npos) << "the note stands in for the worker's line";
  StepResult bad = env.step(Json{{"name", "profile"}, {"arguments", {{"counters", 3}}}});
  EXPECT_NE(bad.observation.find("profile: argument 'counters' must be true or false, not 3"), std::string::npos) << bad.observation;
}

TEST_F(EpisodeTest, TheGpuTimeBudgetTruncatesAndShapingPaysTheFirstVerify) {
  RewardConfig rc;
  rc.shaping.first_verify = 0.5;
  rc.shaping.per_turn = -0.01;
  EnvConfig ec = test_env_config();
  ec.limits.gpu_time_s = 1.0;
  KernelEnv env(ec, rc, replay);
  env.reset(load_task(sample_task("gelu_scale_residual")), 1);
  write_candidate(env, "gelu_scale_residual", "fused");
  replay.reports.push_back(pass_report(1, 2, 600));
  replay.reports.push_back(pass_report(1, 2, 600));
  StepResult v1 = env.step(call("verify"));
  EXPECT_NEAR(v1.reward, 0.49, 1e-12);
  EXPECT_FALSE(v1.truncated);
  EXPECT_NEAR(v1.info["gpu_time_s"].get<double>(), 0.6, 1e-12);
  StepResult v2 = env.step(call("verify"));
  EXPECT_TRUE(v2.truncated);
  EXPECT_EQ(v2.info["termination_reason"], "gpu_time_budget");
  EXPECT_NEAR(v2.reward, -0.01 - 1, 1e-12);
  EXPECT_NEAR(v2.info["episode_reward"].get<double>(), -0.02 - 0.02 + 0.5 - 1, 1e-12) << "two writes, two verifies";
}

TEST_F(EpisodeTest, AReportTheEpisodeCannotReadIsAHarnessFailureNotACrash) {
  KernelEnv env(test_env_config(), RewardConfig{}, replay);
  env.reset(load_task(sample_task("gelu_scale_residual")), 1);
  write_candidate(env, "gelu_scale_residual", "fused");
  Json unreadable = pass_report(1.0, 3.0);
  unreadable["verify"]["passed"] = "yes";
  replay.reports.push_back(unreadable);
  StepResult v = env.step(call("verify"));
  // The judge's report is read strictly at its edge: a mistyped key names itself.
  EXPECT_NE(v.observation.find("verify: the harness failed ("), std::string::npos) << v.observation;
  EXPECT_NE(v.observation.find("report.verify.passed has the wrong type"), std::string::npos) << v.observation;
  EXPECT_TRUE(v.info["report"].contains("harness_error"));
  EXPECT_TRUE(env.running());
}
