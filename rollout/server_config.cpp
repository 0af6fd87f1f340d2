#include "rollout/server_config.h"

#include <filesystem>

#include "configs/error.h"
#include "configs/yaml_reader.h"

namespace kforge {

namespace fs = std::filesystem;

namespace {

std::string resolve(const std::string& path, const std::string& base_dir) {
  if (path.empty() || fs::path(path).is_absolute()) return path;
  return (fs::path(base_dir) / path).lexically_normal().string();
}

std::string path_key(const YamlNode& node, const char* key, const std::string& base_dir) {
  return resolve(node.get<std::string>(key, ""), base_dir);
}

}  // namespace

ServerConfig ServerConfig::from_yaml(const YamlNode& node, const std::string& base_dir) {
  ServerConfig c;
  c.base_dir = base_dir;
  if (node.is_null()) return c;
  c.bind = node.get<std::string>("bind", c.bind);
  if (c.bind.empty()) node.at("bind").fail("must name an endpoint such as tcp://127.0.0.1:5555");
  c.env_config = path_key(node, "env_config", base_dir);
  c.reward_config = path_key(node, "reward_config", base_dir);
  c.eval_config = path_key(node, "eval_config", base_dir);
  c.anticheat_config = path_key(node, "anticheat_config", base_dir);
  if (auto n = node.find("protocol")) c.protocol = ProtocolLimits::from_yaml(*n);
  if (auto n = node.find("tasks"); n && !n->is_null()) {
    c.tasks.samples = n->get<bool>("samples", c.tasks.samples);
    for (const auto& d : n->get<std::vector<std::string>>("dirs", {})) c.tasks.dirs.push_back(resolve(d, base_dir));
    for (const auto& d : n->get<std::vector<std::string>>("datasets", {})) c.tasks.datasets.push_back(resolve(d, base_dir));
    c.tasks.serve_unmeasured = n->get<bool>("serve_unmeasured", c.tasks.serve_unmeasured);
    c.tasks.min_headroom = n->get<double>("min_headroom", c.tasks.min_headroom);
    if (n->find("baselines")) c.tasks.baselines = path_key(*n, "baselines", base_dir);
    if (!(c.tasks.min_headroom >= 0)) n->at("min_headroom").fail("must be >= 0 (0: every row; 1.15: the payable split)");
    n->check_no_unknown_keys();
  }
  if (auto n = node.find("sessions"); n && !n->is_null()) {
    c.sessions.max_episodes = n->get<int>("max_episodes", c.sessions.max_episodes);
    c.sessions.idle_timeout_s = n->get<double>("idle_timeout_s", c.sessions.idle_timeout_s);
    c.sessions.max_episodes_per_client = n->get<int>("max_episodes_per_client", c.sessions.max_episodes_per_client);
    if (c.sessions.max_episodes < 1) n->at("max_episodes").fail("must be >= 1");
    if (c.sessions.max_episodes_per_client < 1) n->at("max_episodes_per_client").fail("must be >= 1");
    if (c.sessions.idle_timeout_s <= 0) n->at("idle_timeout_s").fail("must be > 0");
    n->check_no_unknown_keys();
  }
  if (auto n = node.find("scheduler"); n && !n->is_null()) {
    auto& s = c.scheduler;
    s.compile_workers = n->get<int>("compile_workers", s.compile_workers);
    s.max_compile_queue = n->get<int>("max_compile_queue", s.max_compile_queue);
    s.gpus = n->get<int>("gpus", s.gpus);
    s.max_gpu_queue = n->get<int>("max_gpu_queue", s.max_gpu_queue);
    s.min_retry_after_s = n->get<double>("min_retry_after_s", s.min_retry_after_s);
    s.warm_compiles = n->get<bool>("warm_compiles", s.warm_compiles);
    if (s.compile_workers < 1 || s.compile_workers > 256) n->at("compile_workers").fail("must be in [1, 256]");
    if (s.max_compile_queue < 0) n->at("max_compile_queue").fail("must be >= 0");
    if (s.gpus < -1 || s.gpus > 64) n->at("gpus").fail("must be -1 (every visible GPU), 0 (none) or a count up to 64");
    if (s.max_gpu_queue < 0) n->at("max_gpu_queue").fail("must be >= 0");
    if (s.min_retry_after_s <= 0) n->at("min_retry_after_s").fail("must be > 0");
    n->check_no_unknown_keys();
  }
  if (auto n = node.find("stream"); n && !n->is_null()) {
    c.stream.bind = n->get<std::string>("bind", c.stream.bind);
    c.stream.max_backlog = n->get<int>("max_backlog", c.stream.max_backlog);
    if (c.stream.max_backlog < 1) n->at("max_backlog").fail("must be >= 1");
    n->check_no_unknown_keys();
  }
  if (auto n = node.find("record"); n && !n->is_null()) {
    c.record.path = path_key(*n, "path", base_dir);
    c.record.fsync = n->get<bool>("fsync", c.record.fsync);
    n->check_no_unknown_keys();
  }
  if (auto n = node.find("shutdown"); n && !n->is_null()) {
    c.shutdown.grace_s = n->get<double>("grace_s", c.shutdown.grace_s);
    if (c.shutdown.grace_s < 0) n->at("grace_s").fail("must be >= 0");
    n->check_no_unknown_keys();
  }
  node.check_no_unknown_keys();
  return c;
}

ServerConfig ServerConfig::load(const std::string& path) {
  // Absolute, so that every path resolved against it (and every message naming one) is.
  std::error_code ec;
  fs::path file = fs::absolute(path, ec).lexically_normal();
  if (ec) file = path;
  ServerConfig c = from_yaml(YamlNode::load_file(path, ErrorKind::config), file.parent_path().string());
  c.source = file.string();
  return c;
}

void ServerConfig::check_paths() const {
  auto missing = [this](const std::string& key, const std::string& path, const char* what) {
    std::error_code ec;
    fs::path full = fs::absolute(path, ec).lexically_normal();
    std::string base = fs::absolute(base_dir.empty() ? "." : base_dir, ec).lexically_normal().string();
    if (base.size() > 1 && base.back() == '/') base.pop_back();
    std::string rule =
        source.empty() ? "relative paths resolve against " + base : "relative paths in " + source + " resolve against its folder, " + base;
    KFORGE_FAIL(io, key << ": " << what << " " << full.string() << " does not exist (" << rule << ")");
  };
  auto must_exist = [&](const std::string& key, const std::string& path, const char* what) {
    std::error_code ec;
    if (!path.empty() && !fs::exists(path, ec)) missing(key, path, what);
  };
  must_exist("env_config", env_config, "the file");
  must_exist("reward_config", reward_config, "the file");
  must_exist("eval_config", eval_config, "the file");
  must_exist("anticheat_config", anticheat_config, "the file");
  for (const auto& d : tasks.dirs) must_exist("tasks.dirs", d, "the folder");
  for (const auto& d : tasks.datasets) must_exist("tasks.datasets", d, "the dataset");
  must_exist("tasks.baselines", tasks.baselines, "the folder");
  if (!record.path.empty()) {
    fs::path folder = fs::absolute(record.path).parent_path();
    must_exist("record.path", folder.string(), "the folder of the trajectory file,");
  }
}

}  // namespace kforge
