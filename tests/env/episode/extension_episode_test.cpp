// Episodes of the extension kind (issue 28): the reset option `kind` (or configs/env.yaml's `kind`)
// makes the episode ask for a PyTorch extension; the prompt is the extension template with
// EXTENSION_FORMAT.md; compile() runs the extension's front stages for real (here a glue refusal:
// no build on the CPU suite's budget); verify()/submit() send the workspace's extension candidate
// (reports replayed, episode_replay.h); the history keeps, restores and diffs every file of it.
#include <gtest/gtest.h>

#include "env/episode/episode.h"
#include "tests/env/episode/episode_replay.h"

using namespace kforge;
using namespace kforge::testing;

namespace {

const std::string kSample = "/datasets/samples/extension_candidates/linear_relu/cuda_agent/";

std::string sample_file(const std::string& rel) { return read_file(source_dir() + kSample + rel); }

void write_sample(KernelEnv& env) {
  for (const char* f : {"model_new.py", "kernels/linear_relu.cu", "kernels/linear_relu_binding.cpp"}) {
    StepResult s = env.step(write_call(f, sample_file(f)));
    ASSERT_TRUE(s.info["tool_ok"].get<bool>()) << f << ": " << s.observation;
  }
}

Json hermes(const std::string& name, const Json& arguments) {
  return "<tool_call>" + Json{{"name", name}, {"arguments", arguments}}.dump() + "</tool_call>";
}

}  // namespace

TEST_F(EpisodeTest, TheKindOptionAsksForAnExtensionAndThePromptSaysHowToWriteOne) {
  KernelEnv env(test_env_config(), RewardConfig{}, replay);
  const TaskSpec t = load_task(sample_task("linear_relu"));
  EXPECT_THROW(env.reset(t, 1, {{"kind", "cuda"}}), kforge::Error);
  ResetResult kernel = env.reset(t, 1);
  EXPECT_EQ(env.kind(), CandidateKind::kernel);
  EXPECT_NE(kernel.observation.find("launch.yaml"), std::string::npos);
  EXPECT_EQ(kernel.observation.find("REGISTER_BINDING"), std::string::npos);
  ResetResult ext = env.reset(t, 1, {{"kind", "extension"}});
  EXPECT_EQ(env.kind(), CandidateKind::extension);
  EXPECT_NE(ext.observation.find("You are writing a PyTorch CUDA extension"), std::string::npos) << ext.observation.substr(0, 400);
  EXPECT_NE(ext.observation.find("REGISTER_BINDING"), std::string::npos) << "the format page is EXTENSION_FORMAT.md";
  EXPECT_NE(ext.observation.find("| fc.weight | parameter |"), std::string::npos) << "parameters are named for ModelNew's attributes";
  // The config's kind is the default an option overrides.
  EnvConfig cfg = test_env_config();
  cfg.kind = CandidateKind::extension;
  KernelEnv by_config(cfg, RewardConfig{}, replay);
  by_config.reset(t, 1);
  EXPECT_EQ(by_config.kind(), CandidateKind::extension);
  by_config.reset(t, 1, {{"kind", "kernel"}});
  EXPECT_EQ(by_config.kind(), CandidateKind::kernel);
}

TEST_F(EpisodeTest, CompileOfAnExtensionRunsItsFrontStages) {
  KernelEnv env(test_env_config(), RewardConfig{}, replay);
  env.reset(load_task(sample_task("linear_relu")), 1, {{"kind", "extension"}});
  StepResult none = env.step(call("compile"));
  EXPECT_NE(none.observation.find("no model_new.py"), std::string::npos) << none.observation;
  // A forward that computes with PyTorch is refused by the glue, line and rule named, before any build.
  std::string model = sample_file("model_new.py");
  const size_t ret = model.rfind("return ");
  ASSERT_NE(ret, std::string::npos);
  model.insert(ret, "y = torch.relu(x)\n        ");
  write_sample(env);
  env.step(write_call("model_new.py", model));
  StepResult c = env.step(call("compile"));
  EXPECT_NE(c.info["verdict"], "checked") << c.observation;
  EXPECT_NE(c.observation.find("PyTorch compute"), std::string::npos) << c.observation;
  EXPECT_NE(c.observation.find("model_new.py:"), std::string::npos) << c.observation;
}

TEST_F(EpisodeTest, AnExtensionEpisodeJudgesVersionsOfEveryFileAndRestoresThem) {
  KernelEnv env(test_env_config(), RewardConfig{}, replay);
  TaskSpec t = load_task(sample_task("linear_relu"));
  t.baselines = Baselines{};
  env.reset(t, 1, {{"kind", "extension"}});
  write_sample(env);
  env.step(write_call("notes.md", "first try"));
  replay.reports.push_back(pass_report(1.0, 0.8));
  StepResult v1 = env.step(call("verify"));
  EXPECT_EQ(v1.info["version"], 1) << v1.observation;
  ASSERT_EQ(replay.candidates.size(), 1u);
  EXPECT_EQ(replay.candidates[0].kind, CandidateKind::extension);
  EXPECT_EQ(replay.candidates[0].files.size(), 3u) << "model_new.py and its two sources; notes are not sent";
  EXPECT_EQ(replay.candidates[0].files.at("kernels/linear_relu.cu"), sample_file("kernels/linear_relu.cu"));

  const std::string changed = sample_file("kernels/linear_relu.cu") + "// v2: another tile\n";
  env.step(write_call("kernels/linear_relu.cu", changed));
  env.step(write_call("kernels/extra.cuh", "#pragma once\n"));
  replay.reports.push_back(wrong_report());
  StepResult v2 = env.step(call("verify"));
  EXPECT_EQ(v2.info["version"], 2);

  StepResult d = env.step(hermes("diff", {{"a", 1}, {"b", 2}}));
  EXPECT_NE(d.observation.find("--- v1/kernels/linear_relu.cu\n+++ v2/kernels/linear_relu.cu\n"), std::string::npos) << d.observation;
  EXPECT_NE(d.observation.find("+// v2: another tile\n"), std::string::npos) << d.observation;
  EXPECT_NE(d.observation.find("model_new.py: unchanged"), std::string::npos) << d.observation;
  EXPECT_NE(d.observation.find("kernels/extra.cuh: only in v2"), std::string::npos) << d.observation;

  StepResult r = env.step(hermes("restore", {{"version", 1}}));
  EXPECT_TRUE(r.info["tool_ok"].get<bool>()) << r.observation;
  EXPECT_NE(r.observation.find("kernels/linear_relu_binding.cpp ("), std::string::npos) << r.observation;
  EXPECT_EQ(env.workspace().read("kernels/linear_relu.cu"), sample_file("kernels/linear_relu.cu"));
  replay.reports.push_back(pass_report(1.0, 0.8));
  // The file v2 added is still in the workspace, so this is a third candidate, not v1.
  StepResult v3 = env.step(call("verify"));
  EXPECT_EQ(v3.info["version"], 3);
  const Json versions = env.history().to_json(true);
  EXPECT_EQ(versions[0]["kind"], "extension");
  EXPECT_EQ(versions[0]["files"]["model_new.py"], sample_file("model_new.py"));
  EXPECT_TRUE(versions[2]["files"].contains("kernels/extra.cuh"));
}
