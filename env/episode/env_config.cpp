#include "env/episode/env_config.h"

#include <cstdlib>
#include <filesystem>

#include "configs/yaml_reader.h"

#ifndef KFORGE_SOURCE_DIR
#define KFORGE_SOURCE_DIR "."
#endif

namespace kforge {

namespace fs = std::filesystem;

std::string resource_path(const std::string& relative) {
  const char* env = std::getenv("KFORGE_SOURCE_DIR");
  if (env && *env && fs::exists(fs::path(env) / relative)) return (fs::path(env) / relative).string();
  return (fs::path(KFORGE_SOURCE_DIR) / relative).string();
}

EpisodeLimits EpisodeLimits::from_yaml(const YamlNode& node) {
  EpisodeLimits c;
  c.max_turns = node.get<int>("max_turns", c.max_turns);
  c.wall_clock_s = node.get<double>("wall_clock_s", c.wall_clock_s);
  c.gpu_time_s = node.get<double>("gpu_time_s", c.gpu_time_s);
  c.observation_max_chars = node.get<int>("observation_max_chars", c.observation_max_chars);
  c.prompt_max_chars = node.get<int>("prompt_max_chars", c.prompt_max_chars);
  if (c.max_turns < 1) node.at("max_turns").fail("must be >= 1");
  if (!(c.wall_clock_s >= 0)) node.at("wall_clock_s").fail("must be >= 0 (0: no limit)");
  if (!(c.gpu_time_s >= 0)) node.at("gpu_time_s").fail("must be >= 0 (0: no limit)");
  if (c.observation_max_chars < 256) node.at("observation_max_chars").fail("must be >= 256");
  if (c.prompt_max_chars < 1024) node.at("prompt_max_chars").fail("must be >= 1024");
  node.check_no_unknown_keys();
  return c;
}

WorkspaceLimits WorkspaceLimits::from_yaml(const YamlNode& node) {
  WorkspaceLimits c;
  c.max_files = node.get<int>("max_files", c.max_files);
  c.max_file_bytes = node.get<int64_t>("max_file_bytes", c.max_file_bytes);
  c.max_total_bytes = node.get<int64_t>("max_total_bytes", c.max_total_bytes);
  c.max_path_chars = node.get<int>("max_path_chars", c.max_path_chars);
  c.max_depth = node.get<int>("max_depth", c.max_depth);
  c.allowed_names = node.get<std::vector<std::string>>("allowed_names", c.allowed_names);
  c.allowed_extensions = node.get<std::vector<std::string>>("allowed_extensions", c.allowed_extensions);
  if (c.max_files < 2) node.at("max_files").fail("must be >= 2 (kernel.cu and launch.yaml; model_new.py and a source)");
  if (c.max_file_bytes < 1024) node.at("max_file_bytes").fail("must be >= 1024");
  if (c.max_total_bytes < c.max_file_bytes) node.at("max_total_bytes").fail("must be >= max_file_bytes");
  if (c.max_path_chars < 16) node.at("max_path_chars").fail("must be >= 16");
  if (c.max_depth < 1) node.at("max_depth").fail("must be >= 1");
  for (const auto& e : c.allowed_extensions)
    if (e.size() < 2 || e[0] != '.' || e.find('/') != std::string::npos)
      node.at("allowed_extensions").fail("'" + e + "' is not an extension like .cu");
  for (const auto& n : c.allowed_names)
    if (n.empty() || n.find('/') != std::string::npos || n[0] == '.') node.at("allowed_names").fail("'" + n + "' is not a plain file name");
  node.check_no_unknown_keys();
  return c;
}

PromptConfig PromptConfig::from_yaml(const YamlNode& node, const std::string& base_dir) {
  PromptConfig c = EnvConfig::default_prompt();
  auto resolve = [&](const std::string& key, std::string& out) {
    if (!node.has(key)) return;
    std::string p = node.req<std::string>(key);
    if (p.empty()) node.at(key).fail("must be a path");
    fs::path path = fs::path(p).is_absolute() ? fs::path(p) : fs::path(base_dir) / p;
    if (!fs::is_regular_file(path)) node.at(key).fail("no such file: " + path.string());
    out = path.string();
  };
  resolve("template", c.template_path);
  resolve("format_page", c.format_page);
  resolve("extension_template", c.extension_template_path);
  resolve("extension_format_page", c.extension_format_page);
  node.check_no_unknown_keys();
  return c;
}

ToolConfig ToolConfig::from_yaml(const YamlNode& node) {
  ToolConfig c;
  c.verify_trials = node.get<int>("verify_trials", c.verify_trials);
  c.profile_times = node.get<bool>("profile_times", c.profile_times);
  if (node.has("profile_counters")) {
    // asked | always | never; true and false are read as always and never (the option was a switch).
    const std::string v = node.req<std::string>("profile_counters");
    if (v == "asked")
      c.profile_counters = CountersWhen::asked;
    else if (v == "always" || v == "true")
      c.profile_counters = CountersWhen::always;
    else if (v == "never" || v == "false")
      c.profile_counters = CountersWhen::never;
    else
      node.at("profile_counters").fail("'" + v + "' is not asked, always or never");
  }
  c.profile_metrics = node.get<std::vector<std::string>>("profile_metrics", c.profile_metrics);
  for (size_t i = 0; i < c.profile_metrics.size(); ++i) {
    const std::string& m = c.profile_metrics[i];
    // unit__counter[.rollup[.submetric]]: lower-case letters, digits and '_' around the "__"
    bool ok = m.find("__") != std::string::npos && m.find("__") > 0 && m.size() <= 160;
    for (char ch : m) ok = ok && ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '.');
    if (!ok) node.at("profile_metrics").fail("'" + m + "' is not a metric name like dram__bytes_read.sum");
    for (size_t j = 0; j < i; ++j)
      if (c.profile_metrics[j] == m) node.at("profile_metrics").fail("'" + m + "' is listed twice");
  }
  if (c.verify_trials < 0) node.at("verify_trials").fail("must be >= 0 (0: the eval config's verify.trials)");
  node.check_no_unknown_keys();
  return c;
}

const char* profile_counters_name(CountersWhen c) {
  return c == CountersWhen::asked ? "asked" : c == CountersWhen::always ? "always" : "never";
}

const char* reward_from_name(RewardFrom r) { return r == RewardFrom::best_verified ? "best_verified" : "last_submission"; }

HistoryConfig HistoryConfig::from_yaml(const YamlNode& node) {
  HistoryConfig c;
  std::string from = node.get<std::string>("reward_from", reward_from_name(c.reward_from));
  if (from == "last_submission")
    c.reward_from = RewardFrom::last_submission;
  else if (from == "best_verified")
    c.reward_from = RewardFrom::best_verified;
  else
    node.at("reward_from").fail("'" + from + "' is not last_submission or best_verified");
  node.check_no_unknown_keys();
  return c;
}

PromptConfig EnvConfig::default_prompt() {
  PromptConfig p;
  p.template_path = resource_path("configs/prompt/kernel.md");
  p.format_page = resource_path("env/launch/KERNEL_FORMAT.md");
  p.extension_template_path = resource_path("configs/prompt/extension.md");
  p.extension_format_page = resource_path("env/extension/EXTENSION_FORMAT.md");
  return p;
}

EnvConfig EnvConfig::from_yaml(const YamlNode& node, const std::string& base_dir) {
  EnvConfig c;
  if (node.is_null()) return c;
  if (node.has("kind")) {
    const std::string kind = node.req<std::string>("kind");
    if (kind != "kernel" && kind != "extension") node.at("kind").fail("'" + kind + "' is not kernel or extension");
    c.kind = parse_candidate_kind(kind);
  }
  if (auto n = node.find("limits")) c.limits = EpisodeLimits::from_yaml(*n);
  if (auto n = node.find("workspace")) c.workspace = WorkspaceLimits::from_yaml(*n);
  if (auto n = node.find("prompt")) c.prompt = PromptConfig::from_yaml(*n, base_dir);
  if (auto n = node.find("tools")) c.tools = ToolConfig::from_yaml(*n);
  if (auto n = node.find("history")) c.history = HistoryConfig::from_yaml(*n);
  node.check_no_unknown_keys();
  return c;
}

EnvConfig EnvConfig::load(const std::string& path) {
  std::string dir = fs::path(path).parent_path().string();
  return from_yaml(YamlNode::load_file(path, ErrorKind::config), dir.empty() ? "." : dir);
}

}  // namespace kforge
