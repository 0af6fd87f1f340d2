#pragma once
// Typed view of configs/env.yaml: an episode's limits, the candidate workspace's limits and the
// task prompt's template. Defaults live here, beside the fields; the YAML file documents and may
// override them. Loading validates every value once and rejects unknown keys.
#include <cstdint>
#include <string>
#include <vector>

#include "env/evaluator/candidate_kind.h"

namespace kforge {

// How the episode's reward is chosen (configs/env.yaml history.reward_from).
enum class RewardFrom { last_submission, best_verified };
const char* reward_from_name(RewardFrom r);

// When profile() reads hardware counters (CUPTI's range profiler replays the call once per pass,
// about 0.35 s on the H200 with the default metrics): when the call asks (profile(counters=true)),
// on every profile(), or never.
enum class CountersWhen { asked, always, never };
const char* profile_counters_name(CountersWhen c);

class YamlNode;

struct EpisodeLimits {
  int max_turns = 24;                // steps per episode; the last one truncates (unless it submits)
  double wall_clock_s = 1800;        // wall time since reset(); 0: no limit
  double gpu_time_s = 600;           // GPU request time (verify, profile, submit) since reset(); 0: no limit
  int observation_max_chars = 8000;  // a tool's observation is trimmed in the middle beyond this
  int prompt_max_chars = 40000;      // the first observation (the task prompt) likewise
  static EpisodeLimits from_yaml(const YamlNode& node);
};

struct WorkspaceLimits {
  int max_files = 16;
  int64_t max_file_bytes = 256 * 1024;
  int64_t max_total_bytes = 1024 * 1024;
  int max_path_chars = 96;
  int max_depth = 3;  // path components, file name included
  // Names the policy may write: these exact names anywhere, and any name with these extensions.
  std::vector<std::string> allowed_names = {"kernel.cu", "launch.yaml", "model_new.py"};
  std::vector<std::string> allowed_extensions = {".cu", ".cuh", ".h", ".cpp", ".yaml", ".md", ".txt"};
  static WorkspaceLimits from_yaml(const YamlNode& node);
};

struct PromptConfig {
  // Paths as given, and resolved (relative ones against the config file's directory; the
  // defaults against the kforge resource directory, see resource_path).
  std::string template_path;  // the task prompt, with {{placeholders}} (configs/prompt/kernel.md)
  std::string format_page;    // the candidate format page (env/launch/KERNEL_FORMAT.md)
  // The same two for an episode of the extension kind (configs/prompt/extension.md,
  // env/extension/EXTENSION_FORMAT.md).
  std::string extension_template_path;
  std::string extension_format_page;
  static PromptConfig from_yaml(const YamlNode& node, const std::string& base_dir);
};

struct ToolConfig {
  int verify_trials = 0;                                // trials of verify() and profile(); 0: the eval config's verify.trials
  bool profile_times = true;                            // profile() times the candidate against eager (else verification only)
  CountersWhen profile_counters = CountersWhen::asked;  // when profile() reads hardware counters
  // The counters' metrics (CUPTI/Nsight Compute names); empty: the worker's default list
  // (env/judge/kernel_counters.cpp, default_counter_metrics). Each pass the metrics need replays the call.
  std::vector<std::string> profile_metrics;
  static ToolConfig from_yaml(const YamlNode& node);
};

// The candidate history (env/episode/candidate_history.h) and what the episode's reward is taken from.
struct HistoryConfig {
  // last_submission: the submitted candidate's reward (CUDA Agent's scheme); best_verified: the
  // highest of that and the reward of every version all of whose judgings passed.
  RewardFrom reward_from = RewardFrom::last_submission;
  static HistoryConfig from_yaml(const YamlNode& node);
};

struct EnvConfig {
  // The kind of candidate an episode asks for unless reset's option `kind` names one: the kernel
  // kind (kernel.cu + launch.yaml) or the extension kind (model_new.py and a PyTorch extension).
  CandidateKind kind = CandidateKind::kernel;
  EpisodeLimits limits;
  WorkspaceLimits workspace;
  PromptConfig prompt = default_prompt();
  ToolConfig tools;
  HistoryConfig history;

  static PromptConfig default_prompt();
  static EnvConfig from_yaml(const YamlNode& node, const std::string& base_dir = ".");
  static EnvConfig load(const std::string& path);
};

// A file shipped with kforge (a prompt template, the format page, a sample): under
// $KFORGE_SOURCE_DIR when set, else under the source tree kforge was built from.
std::string resource_path(const std::string& relative);

}  // namespace kforge
