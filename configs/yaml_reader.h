#pragma once
// Strict YAML reading for configs and task specs. Every value is read through a YamlNode that
// knows its file, line and key path, so an error says exactly where it is:
//   configs/eval.yaml:14:3: timing.warmup_cnt: unknown key (did you mean 'warmup_count'?)
// Maps remember which keys were read; check_no_unknown_keys() turns any other key into an error,
// so a misspelt setting is never silently ignored.
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "configs/error.h"

namespace kforge {

// What a YAML text may be before it is read. yaml-cpp parses recursively, so the text is checked
// before it gets there: its size, and a bound on its nesting (flow brackets, block indentation).
// After parsing, the tree is walked without recursion: nesting deeper than max_depth, a key that
// is a list or a mapping, and a key written twice in one mapping are errors with their line (for
// a repeated key yaml-cpp would silently keep the first value). Aliases cannot expand the walk
// past max_nodes.
struct YamlLimits {
  size_t max_bytes = size_t{16} << 20;
  int max_depth = 64;
  size_t max_nodes = size_t{1} << 20;
};

class YamlNode {
 public:
  // Reads and parses a file; a missing file is an io error, bad YAML (or YAML past `limits`,
  // the file's size checked before it is read) an error of `kind`.
  static YamlNode load_file(const std::string& path, ErrorKind kind = ErrorKind::config, const YamlLimits& limits = {});
  static YamlNode parse(const std::string& text, const std::string& origin, ErrorKind kind = ErrorKind::config,
                        const YamlLimits& limits = {});

  bool is_map() const { return node_.IsMap(); }
  bool is_sequence() const { return node_.IsSequence(); }
  bool is_scalar() const { return node_.IsScalar(); }
  bool is_null() const { return !node_.IsDefined() || node_.IsNull(); }

  const std::string& origin() const { return state_->origin; }
  const std::string& key_path() const { return path_; }
  // "file:line:col: key.path" (line and column when the node has them).
  std::string where() const;
  // "file:line:col" alone.
  std::string location() const;
  [[noreturn]] void fail(const std::string& message) const;

  // Map access. Keys asked for are remembered (for suggestions); keys read are marked used.
  bool has(const std::string& key) const;
  YamlNode at(const std::string& key) const;  // a required key
  std::optional<YamlNode> find(const std::string& key) const;
  template <class T>
  T get(const std::string& key, const T& fallback) const {
    auto child = find(key);
    return child && !child->is_null() ? child->as<T>() : fallback;
  }
  template <class T>
  T req(const std::string& key) const {
    return at(key).as<T>();
  }
  // Every key of a map in file order, all marked used (for maps whose keys are data).
  std::vector<std::string> keys() const;
  void check_no_unknown_keys() const;

  // Sequence access.
  size_t size() const;
  YamlNode operator[](size_t index) const;
  std::vector<YamlNode> items() const;

  // Scalar conversion, strict: "1.5" is not an int, "yes" is not a bool, a map is not a string.
  template <class T>
  T as() const;

  const YAML::Node& raw() const { return node_; }

 private:
  struct State {
    std::string origin;
    ErrorKind kind = ErrorKind::config;
  };
  struct MapUse {
    std::set<std::string> used;
    std::set<std::string> asked;
  };
  YamlNode(YAML::Node node, std::shared_ptr<State> state, std::string path)
      : node_(std::move(node)), state_(std::move(state)), path_(std::move(path)), use_(std::make_shared<MapUse>()) {}
  YamlNode child(const YAML::Node& node, const std::string& path) const { return YamlNode(node, state_, path); }
  void expect_map() const;
  std::string scalar_text(const char* what) const;

  YAML::Node node_;
  std::shared_ptr<State> state_;
  std::string path_;
  std::shared_ptr<MapUse> use_;
};

template <>
int64_t YamlNode::as<int64_t>() const;
template <>
uint64_t YamlNode::as<uint64_t>() const;
template <>
int YamlNode::as<int>() const;
template <>
double YamlNode::as<double>() const;
template <>
bool YamlNode::as<bool>() const;
template <>
std::string YamlNode::as<std::string>() const;
template <>
std::vector<int64_t> YamlNode::as<std::vector<int64_t>>() const;
template <>
std::vector<std::string> YamlNode::as<std::vector<std::string>>() const;

// The closest of `candidates` to `word` by edit distance, or "" when none is close.
std::string closest_match(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace kforge
