// kforge demo [--task T] [--policy DIR]: one whole episode of a scripted policy on the GPU, turn by
// turn (the action, the observation trimmed for the terminal), then the reward with its evidence.
#include <filesystem>
#include <iostream>
#include <sstream>

#include <CLI/CLI.hpp>

#include "configs/error.h"
#include "env/cuda/cuda_probe.h"
#include "env/episode/episode.h"
#include "env/episode/observation.h"
#include "env/episode/scripted_policy.h"
#include "tools/kforge/commands.h"

namespace kforge::cli {

namespace {

namespace fs = std::filesystem;

// A policy argument: a directory, or the name of a shipped one (datasets/samples/policies/NAME).
std::string resolve_policy_dir(const std::string& policy) {
  if (fs::is_directory(policy)) return policy;
  std::string shipped = resource_path("datasets/samples/policies/" + policy);
  if (fs::is_directory(shipped)) return shipped;
  KFORGE_FAIL(io, policy << ": no such policy directory (nor a shipped one under datasets/samples/policies/)");
}

// What the policy did, in one line (a written file by its path and size, not its content).
std::string describe(const Json& action) {
  if (action.is_object() && action.value("name", Json()).is_string()) {
    std::string name = action["name"].get<std::string>();
    const Json args = action.contains("arguments") ? action["arguments"] : Json::object();
    if (name == "write_file" && args.is_object() && args.contains("content") && args["content"].is_string())
      return "write_file(path=" + args.value("path", Json()).dump() + ", content=<" +
             std::to_string(args["content"].get<std::string>().size()) + " bytes>)";
    std::string a = args.dump();
    return name + (a == "{}" ? "()" : "(" + trim_middle(a, 200) + ")");
  }
  return "text: " + trim_middle(action.is_string() ? action.get<std::string>() : action.dump(), 300);
}

std::string indent(const std::string& text) {
  std::istringstream in(text);
  std::string line, out;
  while (std::getline(in, line)) out += "  | " + line + "\n";
  return out;
}

}  // namespace

void add_demo_command(CLI::App& app) {
  auto* demo = app.add_subcommand("demo", "Run one episode of a scripted policy on the GPU and show every turn and the reward");
  static std::string task_name, policy = "gelu_fused", env_path, reward_path, eval_path;
  static uint64_t seed = 1;
  static int show_chars = 1500;
  demo->add_option("--task", task_name, "task file or sample name (default: the policy's task)");
  demo->add_option("--policy", policy, "policy directory with policy.yaml, or a shipped policy's name")->capture_default_str();
  demo->add_option("--config", env_path, "environment config (configs/env.yaml); defaults when omitted");
  demo->add_option("--reward-config", reward_path, "reward config (configs/reward.yaml); defaults when omitted");
  demo->add_option("--eval-config", eval_path, "evaluation config (configs/eval.yaml); defaults when omitted");
  demo->add_option("--seed", seed, "episode seed (picks the hidden input draws)")->capture_default_str();
  demo->add_option("--show-chars", show_chars, "characters of each observation to print")->capture_default_str();
  demo->footer("Exit status: 0 when the episode ran to its end, 1 when it could not run (no CUDA device, bad files).");
  set_action(demo, [] {
    std::string why;
    if (!cuda_device_present(&why)) {
      std::cerr << "kforge demo: no CUDA device on this machine (" << why << "); the demo judges candidates on a GPU\n";
      return 1;
    }
    ScriptedPolicy p = ScriptedPolicy::load(resolve_policy_dir(policy));
    std::string task_arg = !task_name.empty() ? task_name : p.task();
    KFORGE_CHECK(!task_arg.empty(), usage, "the policy names no task; give one with --task");
    TaskSpec task = load_task(resolve_task_path(task_arg));
    EnvConfig env_cfg = env_path.empty() ? EnvConfig{} : EnvConfig::load(env_path);
    RewardConfig reward_cfg = reward_path.empty() ? RewardConfig{} : RewardConfig::load(reward_path);
    EvalConfig eval_cfg = eval_path.empty() ? EvalConfig{} : EvalConfig::load(eval_path);
    Evaluator evaluator(eval_cfg);
    EvaluatorJudge judge(evaluator);
    KernelEnv env(env_cfg, reward_cfg, judge);
    const size_t show = static_cast<size_t>(std::max(show_chars, 64));

    std::cout << "kforge demo: policy " << p.name() << " (" << p.description() << ") on task " << task.id << ", seed " << seed << "\n\n";
    ResetResult r = env.reset(task, seed, p.reset_options());
    std::cout << "== reset: the task prompt (" << r.observation.size() << " characters)\n"
              << indent(trim_middle(r.observation, show)) << "\n";
    StepResult last;
    bool stepped = false;
    while (env.running()) {
      auto action = p.next();
      if (!action) break;
      last = env.step(*action);
      stepped = true;
      const Json& i = last.info;
      std::cout << "== turn " << i["turn"].get<int>() << "/" << i["max_turns"].get<int>() << ": " << describe(*action) << "\n"
                << indent(trim_middle(last.observation, show));
      std::ostringstream tail;
      tail.setf(std::ios::fixed);
      tail.precision(2);
      tail << "   reward " << last.reward << ", elapsed " << i["elapsed_s"].get<double>() << " s, GPU time "
           << i["gpu_time_s"].get<double>() << " s" << (last.terminated ? ", terminated" : "") << (last.truncated ? ", truncated" : "")
           << "\n\n";
      std::cout << tail.str();
    }
    if (!stepped || env.running()) {
      std::cout << "the policy's script ended before the episode did (no submit, no limit reached)\n";
      return 0;
    }
    std::cout << "== episode over: " << env.termination_reason() << " after " << env.turn() << " turn(s); episode reward "
              << last.info["episode_reward"].get<double>() << "\n";
    if (last.info.contains("reward")) std::cout << "reward evidence:\n" << last.info["reward"].dump(2) << "\n";
    return 0;
  });
}

}  // namespace kforge::cli
