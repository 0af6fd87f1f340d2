#pragma once
// The shipped candidates (datasets/samples/candidates/<task>/<name>/) with their expected verdicts
// (expect.yaml), for the evaluator's tests.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "configs/yaml_reader.h"
#include "tests/test_paths.h"

namespace kforge::testing {

struct ShippedCandidate {
  std::string task;  // task id (datasets/samples/<task>.yaml)
  std::string name;
  std::string dir;
  std::string verdict;  // pass | wrong | compile_error | launch_error | runtime_error | timeout
  std::string stage;    // compile | run: where a timeout happens
  bool beats_eager = false;
};

inline std::vector<ShippedCandidate> shipped_candidates() {
  namespace fs = std::filesystem;
  std::vector<ShippedCandidate> out;
  fs::path root = fs::path(source_dir()) / "datasets" / "samples" / "candidates";
  if (!fs::exists(root)) return out;
  for (const auto& t : fs::directory_iterator(root)) {
    if (!t.is_directory()) continue;
    for (const auto& c : fs::directory_iterator(t.path())) {
      if (!fs::exists(c.path() / "expect.yaml")) continue;
      YamlNode e = YamlNode::load_file((c.path() / "expect.yaml").string());
      ShippedCandidate sc;
      sc.task = t.path().filename().string();
      sc.name = c.path().filename().string();
      sc.dir = c.path().string();
      sc.verdict = e.req<std::string>("verdict");
      sc.stage = e.get<std::string>("stage", sc.verdict == "compile_error" ? "compile" : "run");
      sc.beats_eager = e.get<bool>("beats_eager", false);
      e.get<std::string>("strategy", "");
      e.check_no_unknown_keys();
      out.push_back(sc);
    }
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.dir < b.dir; });
  return out;
}

// Whether `fired` is `expected` or one of its alternatives ("robustness_draws or timed_calls_verified":
// one guarantee catches an exploit in either phase), as the exploit corpora's expect.yaml write them.
inline bool one_of(const std::string& expected, const std::string& fired) {
  for (size_t at = 0;;) {
    const size_t end = expected.find(" or ", at);
    if (expected.substr(at, end == std::string::npos ? end : end - at) == fired) return true;
    if (end == std::string::npos) return false;
    at = end + 4;
  }
}

inline std::string task_path(const std::string& task) { return source_dir() + "/datasets/samples/" + task + ".yaml"; }

}  // namespace kforge::testing
