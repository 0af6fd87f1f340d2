#include "configs/eval_config.h"

#include "configs/yaml_reader.h"

namespace kforge {

std::map<std::string, std::map<std::string, Tolerance>> PrecisionConfig::default_profiles() {
  return {
      {"default", {{"float32", {1e-4, 1e-4}}, {"float16", {1e-2, 1e-2}}, {"bfloat16", {1e-2, 1e-2}}}},
      // CUDA Agent's published numbers use 1e-2 everywhere.
      {"cuda-agent", {{"float32", {1e-2, 1e-2}}, {"float16", {1e-2, 1e-2}}, {"bfloat16", {1e-2, 1e-2}}}},
  };
}

Tolerance PrecisionConfig::for_dtype(const std::string& dtype) const {
  auto p = profiles.find(profile);
  KFORGE_CHECK(p != profiles.end(), config, "precision profile '" << profile << "' is not defined");
  auto t = p->second.find(dtype);
  KFORGE_CHECK(t != p->second.end(), config, "precision profile '" << profile << "' has no tolerance for dtype " << dtype);
  return t->second;
}

static Tolerance tolerance_from_yaml(const YamlNode& node) {
  Tolerance t;
  t.atol = node.req<double>("atol");
  t.rtol = node.req<double>("rtol");
  if (t.atol < 0 || t.rtol < 0) node.fail("atol and rtol must be >= 0");
  if (t.atol == 0 && t.rtol == 0) node.fail("atol and rtol cannot both be 0");
  node.check_no_unknown_keys();
  return t;
}

PrecisionConfig PrecisionConfig::from_yaml(const YamlNode& node) {
  PrecisionConfig c;
  c.profile = node.get<std::string>("profile", c.profile);
  if (auto profiles = node.find("profiles")) {
    for (const auto& name : profiles->keys()) {
      YamlNode p = profiles->at(name);
      std::map<std::string, Tolerance> per_dtype;
      for (const auto& dtype : p.keys()) {
        if (dtype != "float32" && dtype != "float16" && dtype != "bfloat16")
          p.at(dtype).fail("tolerances are given for float32, float16 or bfloat16, not '" + dtype + "'");
        per_dtype[dtype] = tolerance_from_yaml(p.at(dtype));
      }
      c.profiles[name] = per_dtype;
    }
  }
  if (!c.profiles.count(c.profile)) {
    node.at("profile").fail("profile '" + c.profile + "' is not defined under precision.profiles");
  }
  node.check_no_unknown_keys();
  return c;
}

TimingConfig TimingConfig::from_yaml(const YamlNode& node) { return from_yaml(node, TimingConfig{}); }

TimingConfig TimingConfig::from_yaml(const YamlNode& node, const TimingConfig& defaults) {
  TimingConfig c = defaults;
  c.warmup_count = node.get<int>("warmup_count", c.warmup_count);
  c.warmup_ms = node.get<double>("warmup_ms", c.warmup_ms);
  c.min_reps = node.get<int>("min_reps", c.min_reps);
  c.max_reps = node.get<int>("max_reps", c.max_reps);
  c.target_rse = node.get<double>("target_rse", c.target_rse);
  c.budget_ms = node.get<double>("budget_ms", c.budget_ms);
  c.l2_flush = node.get<bool>("l2_flush", c.l2_flush);
  c.l2_flush_factor = node.get<double>("l2_flush_factor", c.l2_flush_factor);
  c.sequential = node.get<bool>("sequential", c.sequential);
  c.sequential_confidence = node.get<double>("sequential_confidence", c.sequential_confidence);
  c.sequential_growth = node.get<double>("sequential_growth", c.sequential_growth);
  c.prepare_ahead = node.get<bool>("prepare_ahead", c.prepare_ahead);
  if (c.warmup_count < 0) node.at("warmup_count").fail("must be >= 0");
  if (c.warmup_ms < 0) node.at("warmup_ms").fail("must be >= 0");
  if (c.min_reps < 3) node.at("min_reps").fail("must be >= 3 (a median and a spread need samples)");
  if (c.max_reps < c.min_reps) node.at("max_reps").fail("must be >= min_reps (" + std::to_string(c.min_reps) + ")");
  if (!(c.target_rse > 0 && c.target_rse < 1)) node.at("target_rse").fail("must be in (0, 1)");
  if (c.budget_ms <= 0) node.at("budget_ms").fail("must be > 0");
  if (c.l2_flush_factor < 2) node.at("l2_flush_factor").fail("must be >= 2 (the flush writes at least twice the L2)");
  if (!(c.sequential_confidence >= 0.95 && c.sequential_confidence < 1))
    node.at("sequential_confidence").fail("must be in [0.95, 1) (a look's interval is at least as wide as the reward's)");
  if (!(c.sequential_growth > 1)) node.at("sequential_growth").fail("must be > 1");
  node.check_no_unknown_keys();
  return c;
}

VerifyConfig VerifyConfig::from_yaml(const YamlNode& node) {
  VerifyConfig c;
  c.trials = node.get<int>("trials", c.trials);
  c.submit_trials = node.get<int>("submit_trials", c.submit_trials);
  c.report_mismatches = node.get<int>("report_mismatches", c.report_mismatches);
  c.extra_shape_trials = node.get<int>("extra_shape_trials", c.extra_shape_trials);
  if (c.extra_shape_trials < 0) node.at("extra_shape_trials").fail("must be >= 0");
  if (c.trials < 1) node.at("trials").fail("must be >= 1");
  if (c.submit_trials < c.trials) node.at("submit_trials").fail("must be >= trials (" + std::to_string(c.trials) + ")");
  if (c.report_mismatches < 0) node.at("report_mismatches").fail("must be >= 0");
  node.check_no_unknown_keys();
  return c;
}

WorkerConfig WorkerConfig::from_yaml(const YamlNode& node) {
  WorkerConfig c;
  c.compile_timeout_s = node.get<double>("compile_timeout_s", c.compile_timeout_s);
  c.request_timeout_s = node.get<double>("request_timeout_s", c.request_timeout_s);
  c.start_timeout_s = node.get<double>("start_timeout_s", c.start_timeout_s);
  c.max_workspace_bytes = node.get<int64_t>("max_workspace_bytes", c.max_workspace_bytes);
  c.max_file_bytes = node.get<int64_t>("max_file_bytes", c.max_file_bytes);
  c.max_open_files = node.get<int>("max_open_files", c.max_open_files);
  c.compile_address_space_bytes = node.get<int64_t>("compile_address_space_bytes", c.compile_address_space_bytes);
  c.seccomp = node.get<bool>("seccomp", c.seccomp);
  c.arch = node.get<std::string>("arch", c.arch);
  c.compile_cache_dir = node.get<std::string>("compile_cache_dir", c.compile_cache_dir);
  for (const char* k : {"compile_timeout_s", "request_timeout_s", "start_timeout_s"})
    if (node.has(k) && !(node.req<double>(k) > 0)) node.at(k).fail("must be > 0");
  if (c.max_workspace_bytes < 0) node.at("max_workspace_bytes").fail("must be >= 0");
  if (c.max_file_bytes < (1 << 20)) node.at("max_file_bytes").fail("must be >= 1 MiB");
  if (c.max_open_files < 64) node.at("max_open_files").fail("must be >= 64");
  if (c.compile_address_space_bytes < (int64_t{1} << 30)) node.at("compile_address_space_bytes").fail("must be >= 1 GiB");
  if (!c.arch.empty() && c.arch.rfind("sm_", 0) != 0) node.at("arch").fail("must look like sm_90a, or be empty");
  node.check_no_unknown_keys();
  return c;
}

DrawConfig DrawConfig::from_yaml(const YamlNode& node) {
  DrawConfig c;
  c.salt = node.get<uint64_t>("salt", c.salt);
  node.check_no_unknown_keys();
  return c;
}

EvalConfig EvalConfig::from_yaml(const YamlNode& node) {
  EvalConfig c;
  if (node.is_null()) return c;
  if (auto n = node.find("precision")) c.precision = PrecisionConfig::from_yaml(*n);
  if (auto n = node.find("timing")) c.timing = TimingConfig::from_yaml(*n);
  if (auto n = node.find("draws")) c.draws = DrawConfig::from_yaml(*n);
  if (auto n = node.find("verify")) c.verify = VerifyConfig::from_yaml(*n);
  if (auto n = node.find("worker")) c.worker = WorkerConfig::from_yaml(*n);
  node.check_no_unknown_keys();
  return c;
}

EvalConfig EvalConfig::load(const std::string& path) { return from_yaml(YamlNode::load_file(path, ErrorKind::config)); }

}  // namespace kforge
