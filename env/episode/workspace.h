#pragma once
// The candidate workspace of one episode: the files the policy writes, kept in memory (nothing the
// policy names ever becomes a path on the host). Paths are checked before anything is stored:
// relative, no `..` or `.` components, no hidden or odd names, an allow-list of names and
// extensions, and limits on path length, depth, file size, file count and total size. Every refusal
// is a sentence the policy can act on.
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "env/episode/env_config.h"
#include "env/evaluator/candidate_kind.h"

namespace kforge {

struct Candidate;

class Workspace {
 public:
  explicit Workspace(WorkspaceLimits limits = {}) : limits_(std::move(limits)) {}

  // "" when `path` may be written, else why not.
  std::string check_path(const std::string& path) const;
  // Stores (or replaces) a file; "" on success, else why it was refused (nothing changes then).
  std::string write(const std::string& path, const std::string& content);
  // The file's content, or nullopt when there is none.
  std::optional<std::string> read(const std::string& path) const;
  const std::map<std::string, std::string>& files() const { return files_; }
  int64_t total_bytes() const;
  void clear() { files_.clear(); }

  // The workspace's candidate of the episode's kind, or nullopt with `why` set: the kernel kind's
  // kernel.cu and launch.yaml; the extension kind's model_new.py and every file the build compiles
  // or includes (env/extension/source_rules.h, extension_file_kind; notes are left out).
  std::optional<Candidate> candidate(const std::string& label, CandidateKind kind, std::string& why) const;

 private:
  WorkspaceLimits limits_;
  std::map<std::string, std::string> files_;
};

// The files a candidate is judged by, by path: kernel.cu and launch.yaml, or the extension's files.
std::map<std::string, std::string> judged_files(const Candidate& candidate);

// The identity of a candidate within an episode: SHA-256 (hex) of its kind and its judged files,
// byte for byte (the workspace's other files are notes and do not count).
std::string candidate_content_hash(const Candidate& candidate);

}  // namespace kforge
