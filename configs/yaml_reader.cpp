#include "configs/yaml_reader.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

namespace kforge {

YamlNode YamlNode::load_file(const std::string& path, ErrorKind kind) {
  std::ifstream in(path);
  if (!in) {
    const int err = errno;
    std::error_code ec;
    const std::filesystem::path full = std::filesystem::absolute(path, ec).lexically_normal();
    KFORGE_FAIL(io, path << ": cannot open file (" << std::strerror(err) << ")"
                         << (ec || full.string() == path ? "" : "; the full path tried: " + full.string()));
  }
  std::stringstream text;
  text << in.rdbuf();
  return parse(text.str(), path, kind);
}

YamlNode YamlNode::parse(const std::string& text, const std::string& origin, ErrorKind kind) {
  auto state = std::make_shared<State>(State{origin, kind});
  try {
    return YamlNode(YAML::Load(text), state, "");
  } catch (const YAML::Exception& e) {
    std::ostringstream os;
    os << origin;
    if (!e.mark.is_null()) os << ":" << e.mark.line + 1 << ":" << e.mark.column + 1;
    os << ": not valid YAML: " << e.msg;
    throw_error(kind, os.str());
  }
}

std::string YamlNode::location() const {
  std::ostringstream os;
  os << state_->origin;
  if (node_.IsDefined()) {
    YAML::Mark m = node_.Mark();
    if (!m.is_null()) os << ":" << m.line + 1 << ":" << m.column + 1;
  }
  return os.str();
}

std::string YamlNode::where() const { return path_.empty() ? location() : location() + ": " + path_; }

void YamlNode::fail(const std::string& message) const {
  throw_error(state_->kind, where() + ": " + message);
}

void YamlNode::expect_map() const {
  if (!node_.IsMap()) fail(node_.IsDefined() && !node_.IsNull() ? "expected a mapping" : "expected a mapping, found nothing");
}

static std::string join_path(const std::string& base, const std::string& key) {
  return base.empty() ? key : base + "." + key;
}

bool YamlNode::has(const std::string& key) const {
  use_->asked.insert(key);
  return node_.IsMap() && node_[key].IsDefined();
}

std::optional<YamlNode> YamlNode::find(const std::string& key) const {
  expect_map();
  use_->asked.insert(key);
  YAML::Node c = node_[key];
  if (!c.IsDefined()) return std::nullopt;
  use_->used.insert(key);
  return child(c, join_path(path_, key));
}

YamlNode YamlNode::at(const std::string& key) const {
  auto c = find(key);
  if (!c) fail("missing required key '" + key + "'");
  return *c;
}

std::vector<std::string> YamlNode::keys() const {
  expect_map();
  std::vector<std::string> out;
  for (const auto& kv : node_) {
    std::string k = kv.first.as<std::string>();
    use_->used.insert(k);
    out.push_back(k);
  }
  return out;
}

void YamlNode::check_no_unknown_keys() const {
  if (!node_.IsMap()) return;
  for (const auto& kv : node_) {
    std::string k = kv.first.Scalar();
    if (use_->used.count(k)) continue;
    std::vector<std::string> known(use_->asked.begin(), use_->asked.end());
    std::string hint = closest_match(k, known);
    std::ostringstream os;
    os << state_->origin;
    YAML::Mark m = kv.first.Mark();
    if (!m.is_null()) os << ":" << m.line + 1 << ":" << m.column + 1;
    os << ": " << join_path(path_, k) << ": unknown key";
    if (!hint.empty()) os << " (did you mean '" << hint << "'?)";
    else if (!known.empty()) {
      std::sort(known.begin(), known.end());
      os << " (known keys:";
      for (const auto& s : known) os << " " << s;
      os << ")";
    }
    throw_error(state_->kind, os.str());
  }
}

size_t YamlNode::size() const {
  if (!node_.IsSequence()) fail("expected a list");
  return node_.size();
}

YamlNode YamlNode::operator[](size_t index) const {
  if (!node_.IsSequence()) fail("expected a list");
  if (index >= node_.size()) fail("index " + std::to_string(index) + " out of range");
  return child(node_[index], path_ + "[" + std::to_string(index) + "]");
}

std::vector<YamlNode> YamlNode::items() const {
  std::vector<YamlNode> out;
  size_t n = size();
  for (size_t i = 0; i < n; ++i) out.push_back((*this)[i]);
  return out;
}

std::string YamlNode::scalar_text(const char* what) const {
  if (!node_.IsDefined() || node_.IsNull()) fail(std::string("expected ") + what + ", found nothing");
  if (!node_.IsScalar()) fail(std::string("expected ") + what + ", found a " + (node_.IsMap() ? "mapping" : "list"));
  return node_.Scalar();
}

template <>
int64_t YamlNode::as<int64_t>() const {
  std::string s = scalar_text("an integer");
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno == ERANGE) fail("expected an integer, found '" + s + "'");
  return v;
}

template <>
uint64_t YamlNode::as<uint64_t>() const {
  std::string s = scalar_text("a non-negative integer");
  errno = 0;
  char* end = nullptr;
  if (!s.empty() && s[0] == '-') fail("expected a non-negative integer, found '" + s + "'");
  unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno == ERANGE) fail("expected a non-negative integer, found '" + s + "'");
  return v;
}

template <>
int YamlNode::as<int>() const {
  int64_t v = as<int64_t>();
  if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max())
    fail("integer " + std::to_string(v) + " out of range");
  return static_cast<int>(v);
}

template <>
double YamlNode::as<double>() const {
  std::string s = scalar_text("a number");
  if (s == ".inf" || s == "inf") return std::numeric_limits<double>::infinity();
  if (s == "-.inf" || s == "-inf") return -std::numeric_limits<double>::infinity();
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || std::isnan(v)) fail("expected a number, found '" + s + "'");
  return v;
}

template <>
bool YamlNode::as<bool>() const {
  std::string s = scalar_text("true or false");
  if (s == "true") return true;
  if (s == "false") return false;
  fail("expected true or false, found '" + s + "'");
}

template <>
std::string YamlNode::as<std::string>() const {
  return scalar_text("a string");
}

template <>
std::vector<int64_t> YamlNode::as<std::vector<int64_t>>() const {
  std::vector<int64_t> out;
  for (const auto& item : items()) out.push_back(item.as<int64_t>());
  return out;
}

template <>
std::vector<std::string> YamlNode::as<std::vector<std::string>>() const {
  std::vector<std::string> out;
  for (const auto& item : items()) out.push_back(item.as<std::string>());
  return out;
}

static size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string closest_match(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = std::numeric_limits<size_t>::max();
  for (const auto& c : candidates) {
    size_t d = edit_distance(word, c);
    if (d < best_d) best_d = d, best = c;
  }
  size_t limit = std::max<size_t>(2, word.size() / 3);
  return best_d <= limit ? best : "";
}

}  // namespace kforge
