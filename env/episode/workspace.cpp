#include "env/episode/workspace.h"

#include <algorithm>

#include "configs/sha256.h"
#include "env/evaluator/evaluator.h"
#include "env/extension/source_rules.h"

namespace kforge {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool plain_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace

std::string Workspace::check_path(const std::string& path) const {
  if (path.empty()) return "the path is empty";
  if (static_cast<int>(path.size()) > limits_.max_path_chars)
    return "the path is " + std::to_string(path.size()) + " characters long; at most " + std::to_string(limits_.max_path_chars) +
           " are allowed";
  if (path[0] == '/' || path[0] == '~') return "'" + path + "' is absolute; paths are relative to the workspace (e.g. kernel.cu)";
  if (path.find('\\') != std::string::npos) return "'" + path + "' contains a backslash; separate directories with /";
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    size_t slash = path.find('/', start);
    parts.push_back(path.substr(start, slash == std::string::npos ? std::string::npos : slash - start));
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  for (const auto& p : parts) {
    if (p == "..") return "'" + path + "' leaves the workspace (..); paths stay inside it";
    if (p.empty() || p == ".") return "'" + path + "' has an empty or '.' component; write paths like dir/file.cu";
    if (p[0] == '.' || p[0] == '-') return "'" + path + "': names may not start with '.' or '-'";
    for (char c : p)
      if (!plain_char(c)) return "'" + path + "' contains a character other than letters, digits, '_', '-', '.' and '/'";
  }
  if (static_cast<int>(parts.size()) > limits_.max_depth)
    return "'" + path + "' is " + std::to_string(parts.size()) + " levels deep; at most " + std::to_string(limits_.max_depth) +
           " are allowed";
  const std::string& name = parts.back();
  bool allowed = std::find(limits_.allowed_names.begin(), limits_.allowed_names.end(), name) != limits_.allowed_names.end();
  for (const auto& ext : limits_.allowed_extensions) allowed = allowed || (name.size() > ext.size() && ends_with(name, ext));
  if (!allowed)
    return "'" + path + "' is not a file the workspace takes: names " + join(limits_.allowed_names) + ", or extensions " +
           join(limits_.allowed_extensions);
  return "";
}

int64_t Workspace::total_bytes() const {
  int64_t n = 0;
  for (const auto& [p, c] : files_) n += static_cast<int64_t>(c.size());
  return n;
}

std::string Workspace::write(const std::string& path, const std::string& content) {
  std::string why = check_path(path);
  if (!why.empty()) return why;
  int64_t size = static_cast<int64_t>(content.size());
  if (size > limits_.max_file_bytes)
    return path + " would be " + std::to_string(size) + " bytes; a file may hold at most " + std::to_string(limits_.max_file_bytes);
  auto existing = files_.find(path);
  if (existing == files_.end() && static_cast<int>(files_.size()) >= limits_.max_files)
    return "the workspace already holds " + std::to_string(files_.size()) + " files, the most it takes; overwrite one instead";
  int64_t total = total_bytes() - (existing == files_.end() ? 0 : static_cast<int64_t>(existing->second.size())) + size;
  if (total > limits_.max_total_bytes)
    return "the workspace would hold " + std::to_string(total) + " bytes; at most " + std::to_string(limits_.max_total_bytes) +
           " are allowed in all";
  if (content.find('\0') != std::string::npos) return path + ": the content contains a NUL byte; files are text";
  files_[path] = content;
  return "";
}

std::optional<std::string> Workspace::read(const std::string& path) const {
  auto it = files_.find(path);
  if (it == files_.end()) return std::nullopt;
  return it->second;
}

std::optional<Candidate> Workspace::candidate(const std::string& label, CandidateKind kind, std::string& why) const {
  Candidate c;
  c.kind = kind;
  c.dir = label;
  if (kind == CandidateKind::extension) {
    if (!files_.count("model_new.py")) {
      why = "the workspace has no model_new.py; write it (and the extension's sources) with write_file first";
      return std::nullopt;
    }
    for (const auto& [path, content] : files_)
      if (path == "model_new.py" || extension_file_kind(path) != ExtensionFileKind::other) c.files[path] = content;
    return c;
  }
  auto k = files_.find("kernel.cu");
  auto l = files_.find("launch.yaml");
  if (k == files_.end() || l == files_.end()) {
    why = std::string("the workspace has no ") +
          (k == files_.end() && l == files_.end() ? "kernel.cu and no launch.yaml"
           : k == files_.end()                    ? "kernel.cu"
                                                  : "launch.yaml") +
          "; write them with write_file first";
    return std::nullopt;
  }
  c.source = k->second;
  c.plan_text = l->second;
  return c;
}

std::map<std::string, std::string> judged_files(const Candidate& c) {
  if (c.kind == CandidateKind::extension) return c.files;
  return {{"kernel.cu", c.source}, {"launch.yaml", c.plan_text}};
}

std::string candidate_content_hash(const Candidate& c) {
  // Length-prefixed, so no split of the same bytes between files hashes alike. In path order: the
  // kernel kind's hash is the one it always had (kernel.cu, then launch.yaml, no kind).
  std::string text = c.kind == CandidateKind::extension ? "extension\n" : "";
  for (const auto& [path, content] : judged_files(c)) text += path + " " + std::to_string(content.size()) + "\n" + content;
  return sha256_hex(text);
}

}  // namespace kforge
