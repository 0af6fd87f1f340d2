#pragma once
// Shared by the episode suites: the sample tasks, shipped policies, an evaluator set up for tests,
// and a loop that plays a scripted policy through an episode.
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "env/episode/episode.h"
#include "env/episode/scripted_policy.h"
#include "tests/test_paths.h"

namespace kforge::testing {

inline std::string sample_task(const std::string& name) { return source_dir() + "/datasets/samples/" + name + ".yaml"; }
inline std::string policy_dir(const std::string& name) { return source_dir() + "/datasets/samples/policies/" + name; }
inline std::string candidate_file(const std::string& task, const std::string& cand, const std::string& file) {
  return source_dir() + "/datasets/samples/candidates/" + task + "/" + cand + "/" + file;
}

inline EvalConfig test_eval_config() {
  EvalConfig c;
  c.worker.compile_timeout_s = 30;
  c.worker.arch = "sm_90a";  // compile() works without a GPU (NVRTC on the CPU)
  return c;
}

inline EnvConfig test_env_config() {
  EnvConfig c;  // the default prompt files, found through $KFORGE_SOURCE_DIR
  return c;
}

struct PlayedStep {
  Json action;
  StepResult result;
};

// Plays `policy` from reset until the episode ends or the policy has nothing more to say.
inline std::vector<PlayedStep> play(KernelEnv& env, ScriptedPolicy& policy, const TaskSpec& task, uint64_t seed = 1,
                                    const Json& options = Json::object()) {
  std::vector<PlayedStep> steps;
  env.reset(task, seed, options);
  while (env.running()) {
    auto action = policy.next();
    if (!action) break;
    steps.push_back({*action, env.step(*action)});
  }
  return steps;
}

// Prints each played step on one line (the GPU suites' log): turn, tool, the observation's start, reward.
inline void print_steps(const std::string& label, const std::vector<PlayedStep>& steps) {
  for (const auto& s : steps)
    std::printf("[%s] turn %d %s -> %.60s... reward %g\n", label.c_str(), s.result.info["turn"].get<int>(),
                s.result.info["tool"].is_null() ? "(no tool)" : s.result.info["tool"].get<std::string>().c_str(),
                s.result.observation.c_str(), s.result.reward);
}

}  // namespace kforge::testing
