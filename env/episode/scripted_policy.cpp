#include "env/episode/scripted_policy.h"

#include <filesystem>

#include "configs/error.h"
#include "configs/file_reader.h"
#include "configs/yaml_reader.h"

namespace kforge {

namespace fs = std::filesystem;

namespace {

// A YAML value as JSON: maps, sequences, and scalars typed as YAML 1.2's core schema reads them.
Json yaml_to_json(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return Json();
  if (n.IsMap()) {
    Json o = Json::object();
    for (const auto& kv : n) o[kv.first.as<std::string>()] = yaml_to_json(kv.second);
    return o;
  }
  if (n.IsSequence()) {
    Json a = Json::array();
    for (const auto& v : n) a.push_back(yaml_to_json(v));
    return a;
  }
  std::string s = n.Scalar();
  if (n.Tag() == "!") return s;  // quoted: always a string
  if (s == "true") return true;
  if (s == "false") return false;
  char* end = nullptr;
  long long i = std::strtoll(s.c_str(), &end, 10);
  if (!s.empty() && *end == '\0') return i;
  double d = std::strtod(s.c_str(), &end);
  if (!s.empty() && *end == '\0') return d;
  return s;
}

}  // namespace

ScriptedPolicy ScriptedPolicy::load(const std::string& dir) {
  fs::path file = fs::path(dir) / "policy.yaml";
  KFORGE_CHECK(fs::is_regular_file(file), io, dir << ": no policy.yaml in this directory");
  YamlNode root = YamlNode::load_file(file.string(), ErrorKind::config);
  ScriptedPolicy p;
  p.name_ = fs::path(dir).filename().string();
  if (p.name_.empty()) p.name_ = fs::path(dir).parent_path().filename().string();
  p.task_ = root.get<std::string>("task", "");
  p.description_ = root.get<std::string>("description", "");
  p.loop_ = root.get<bool>("loop", false);
  p.kind_ = root.get<std::string>("kind", "");
  if (!p.kind_.empty() && p.kind_ != "kernel" && p.kind_ != "extension") root.at("kind").fail("must be kernel or extension");
  YamlNode turns = root.at("turns");
  if (!turns.is_sequence() || turns.size() == 0) turns.fail("must be a non-empty list of turns");
  for (const YamlNode& t : turns.items()) {
    if (!t.is_map()) t.fail("a turn is a map: {write: ...}, {call: ...}, {text: ...} or {action: ...}");
    int kinds = t.has("write") + t.has("call") + t.has("text") + t.has("action");
    if (kinds != 1) t.fail("a turn has exactly one of write, call, text, action");
    if (t.has("write")) {
      std::string path = t.req<std::string>("write");
      std::string content;
      if (t.has("from") == t.has("content")) t.fail("a write turn has either from: FILE or content: TEXT");
      if (t.has("from")) {
        const std::string from = (fs::path(dir) / t.req<std::string>("from")).string();
        std::optional<std::string> text = try_read_file(from);
        if (!text) t.at("from").fail("cannot read " + from);  // where the policy names it
        content = std::move(*text);
      } else {
        content = t.req<std::string>("content");
      }
      p.actions_.push_back({{"name", "write_file"}, {"arguments", {{"path", path}, {"content", content}}}});
    } else if (t.has("call")) {
      Json call = {{"name", t.req<std::string>("call")}, {"arguments", Json::object()}};
      if (auto a = t.find("arguments")) call["arguments"] = yaml_to_json(a->raw());
      p.actions_.push_back(call);
    } else if (t.has("text")) {
      p.actions_.push_back(t.req<std::string>("text"));
    } else {
      p.actions_.push_back(yaml_to_json(t.at("action").raw()));
    }
    t.check_no_unknown_keys();
  }
  root.check_no_unknown_keys();
  return p;
}

std::optional<Json> ScriptedPolicy::next() {
  if (cursor_ >= actions_.size()) {
    if (!loop_) return std::nullopt;
    cursor_ = 0;
  }
  return actions_[cursor_++];
}

Json ScriptedPolicy::reset_options() const {
  Json o = Json::object();
  if (!kind_.empty()) o["kind"] = kind_;
  return o;
}

}  // namespace kforge
