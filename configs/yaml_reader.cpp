#include "configs/yaml_reader.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <sstream>

#include "configs/file_reader.h"

namespace kforge {

namespace {

[[noreturn]] void fail_line(ErrorKind kind, const std::string& origin, size_t line, size_t column, const std::string& message) {
  throw_error(kind, origin + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " + message);
}

// Does a block scalar (`|`, `>-`, `|2+` ...) start at the end of this line's content? Its lines
// are text, not structure, and are skipped by the scan below.
bool opens_block_scalar(const std::string& content) {
  size_t end = content.find_last_not_of(" \t\r");
  if (end == std::string::npos) return false;
  size_t p = end;
  while (p > 0 && (content[p] == '-' || content[p] == '+' || std::isdigit(static_cast<unsigned char>(content[p])))) --p;
  if (content[p] != '|' && content[p] != '>') return false;
  return p == 0 || content[p - 1] == ' ' || content[p - 1] == '\t';
}

// Checks the text before yaml-cpp sees it. The nesting yaml-cpp recurses to is bounded by the flow
// brackets open at once (at most max_depth) plus twice the block indentation of a line's first
// node (at most 4 * max_depth columns), which keeps it far below yaml-cpp's own guard of 2000
// levels; the exact depth is checked on the tree afterwards. Quoted scalars, comments and block
// scalars are skipped, so brackets in text do not count.
void check_text(const std::string& text, const std::string& origin, ErrorKind kind, const YamlLimits& lim) {
  if (text.size() > lim.max_bytes)
    throw_error(kind, origin + ": " + std::to_string(text.size()) + " bytes of YAML, over the limit of " + std::to_string(lim.max_bytes));
  const size_t max_indent = 4 * static_cast<size_t>(lim.max_depth);
  int flow = 0;
  char quote = 0;
  long block_indent = -1;  // >= 0: inside a block scalar opened on a line of that indentation
  size_t line_no = 0, pos = 0;
  while (pos <= text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) eol = text.size();
    const std::string line = text.substr(pos, eol - pos);
    pos = eol + 1;
    ++line_no;
    size_t indent = line.find_first_not_of(' ');
    if (block_indent >= 0) {
      if (indent == std::string::npos || line[indent] == '\r' || static_cast<long>(indent) > block_indent) continue;
      block_indent = -1;
    }
    if (indent == std::string::npos) continue;
    size_t i = indent;
    if (quote == 0 && flow == 0) {
      while (i < line.size() && (line[i] == '-' || line[i] == '?') && (i + 1 == line.size() || line[i + 1] == ' '))
        i = std::min(line.size(), line.find_first_not_of(' ', i + 1));
      if (i > max_indent)
        fail_line(kind, origin, line_no, i + 1,
                  "a node indented " + std::to_string(i) + " columns, over the limit of " + std::to_string(max_indent));
      i = indent;
    }
    size_t content_end = line.size();
    for (; i < line.size(); ++i) {
      const char c = line[i], prev = i == 0 ? ' ' : line[i - 1];
      const bool node_start = prev == ' ' || prev == '\t' || i == indent || (flow > 0 && (prev == '[' || prev == '{' || prev == ','));
      if (quote == '"') {
        if (c == '\\')
          ++i;
        else if (c == '"')
          quote = 0;
      } else if (quote == '\'') {
        if (c == '\'' && i + 1 < line.size() && line[i + 1] == '\'')
          ++i;
        else if (c == '\'')
          quote = 0;
      } else if (c == '#' && (prev == ' ' || prev == '\t' || i == 0)) {
        content_end = i;
        break;
      } else if ((c == '"' || c == '\'') && node_start) {
        quote = c;
      } else if ((c == '[' || c == '{') && (flow > 0 || node_start)) {
        if (++flow > lim.max_depth)
          fail_line(kind, origin, line_no, i + 1, "flow collections nested deeper than " + std::to_string(lim.max_depth) + " levels");
      } else if ((c == ']' || c == '}') && flow > 0) {
        --flow;
      }
    }
    if (quote == 0 && flow == 0 && opens_block_scalar(line.substr(0, content_end))) block_indent = static_cast<long>(indent);
  }
}

// The parsed tree, walked with an explicit stack: depth, key kinds, repeated keys, node count.
void check_tree(const YAML::Node& root, const std::string& origin, ErrorKind kind, const YamlLimits& lim) {
  auto fail_at = [&](const YAML::Node& n, const std::string& message) {
    YAML::Mark m = n.Mark();
    if (m.is_null()) throw_error(kind, origin + ": " + message);
    fail_line(kind, origin, m.line + 1, m.column + 1, message);
  };
  std::vector<std::pair<YAML::Node, int>> stack{{root, 1}};
  size_t visited = 0;
  while (!stack.empty()) {
    auto [node, depth] = stack.back();
    stack.pop_back();
    if (++visited > lim.max_nodes)
      throw_error(kind, origin + ": more than " + std::to_string(lim.max_nodes) + " YAML nodes (aliases included)");
    if (depth > lim.max_depth) fail_at(node, "nested deeper than " + std::to_string(lim.max_depth) + " levels");
    if (node.IsSequence()) {
      for (const YAML::Node& item : node) stack.push_back({item, depth + 1});
    } else if (node.IsMap()) {
      std::map<std::string, size_t> first_line;
      for (const auto& kv : node) {
        if (kv.first.IsMap() || kv.first.IsSequence()) fail_at(kv.first, "a key must be a plain value, not a list or a mapping");
        const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "";
        const size_t line = kv.first.Mark().is_null() ? 0 : kv.first.Mark().line + 1;
        auto [it, fresh] = first_line.emplace(key, line);
        if (!fresh)
          fail_at(kv.first,
                  "duplicate key '" + key + "' (first at line " + std::to_string(it->second) + "); a key may appear once in a mapping");
        stack.push_back({kv.second, depth + 1});
      }
    }
  }
}

}  // namespace

YamlNode YamlNode::load_file(const std::string& path, ErrorKind kind, const YamlLimits& limits) {
  return parse(read_file(path, "file", {static_cast<int64_t>(limits.max_bytes), kind}), path, kind, limits);
}

YamlNode YamlNode::parse(const std::string& text, const std::string& origin, ErrorKind kind, const YamlLimits& limits) {
  auto state = std::make_shared<State>(State{origin, kind});
  check_text(text, origin, kind, limits);
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    std::ostringstream os;
    os << origin;
    if (!e.mark.is_null()) os << ":" << e.mark.line + 1 << ":" << e.mark.column + 1;
    os << ": not valid YAML: " << e.msg;
    throw_error(kind, os.str());
  }
  check_tree(root, origin, kind, limits);
  return YamlNode(root, state, "");
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

void YamlNode::fail(const std::string& message) const { throw_error(state_->kind, where() + ": " + message); }

void YamlNode::expect_map() const {
  if (!node_.IsMap()) fail(node_.IsDefined() && !node_.IsNull() ? "expected a mapping" : "expected a mapping, found nothing");
}

static std::string join_path(const std::string& base, const std::string& key) { return base.empty() ? key : base + "." + key; }

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
    if (!hint.empty())
      os << " (did you mean '" << hint << "'?)";
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
  if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max()) fail("integer " + std::to_string(v) + " out of range");
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
    for (size_t j = 1; j <= b.size(); ++j) cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
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
