#pragma once
// What the static-check tests share: a scan of a source text and views of its findings.
#include <set>
#include <string>
#include <utility>

#include "anticheat/static_checks.h"

namespace kforge::testing::static_scan {

inline StaticReport scan(const std::string& source, const StaticCheckConfig& config = {}) { return run_static_checks(source, "", config); }

// (line, check) of every finding.
inline std::set<std::pair<int, std::string>> found(const StaticReport& r) {
  std::set<std::pair<int, std::string>> s;
  for (const CheckFinding& f : r.findings) s.insert({f.line, f.check});
  return s;
}

inline bool flags(const StaticReport& r, const std::string& check, int line) { return found(r).count({line, check}) > 0; }

inline int count(const StaticReport& r, const std::string& check) {
  int n = 0;
  for (const CheckFinding& f : r.findings) n += f.check == check;
  return n;
}

inline std::string dump(const StaticReport& r) {
  std::string s;
  for (const CheckFinding& f : r.findings) s += "[" + f.check + "] " + format_finding(f) + "\n";
  return s.empty() ? "(no findings)" : s;
}

}  // namespace kforge::testing::static_scan
