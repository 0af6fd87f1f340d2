#include "env/episode/candidate_history.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <sstream>

#include "configs/error.h"
#include "env/episode/workspace.h"

namespace kforge {

namespace {

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t from = 0;
  while (from < text.size()) {
    size_t nl = text.find('\n', from);
    if (nl == std::string::npos) {
      lines.push_back(text.substr(from));
      break;
    }
    lines.push_back(text.substr(from, nl - from));
    from = nl + 1;
  }
  return lines;
}

// One line of a diff: ' ' kept, '-' only in a, '+' only in b; its line numbers (1-based) in a and b.
struct DiffLine {
  char op;
  int a, b;  // the line's number in a (for ' ' and '-') and in b (for ' ' and '+')
};

// The edit script between a and b: common prefix and suffix trimmed, then a longest common
// subsequence by dynamic programming over what is left, or, beyond kMaxCells, the middle replaced whole.
std::vector<DiffLine> edit_script(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  constexpr size_t kMaxCells = size_t{1} << 22;  // 4 Mi one-byte cells: at most ~2000 x 2000 changed lines
  size_t pre = 0;
  while (pre < a.size() && pre < b.size() && a[pre] == b[pre]) ++pre;
  size_t suf = 0;
  while (suf < a.size() - pre && suf < b.size() - pre && a[a.size() - 1 - suf] == b[b.size() - 1 - suf]) ++suf;
  size_t n = a.size() - pre - suf, m = b.size() - pre - suf;
  std::vector<DiffLine> out;
  for (size_t i = 0; i < pre; ++i) out.push_back({' ', int(i + 1), int(i + 1)});
  if (n * m > kMaxCells) {
    for (size_t i = 0; i < n; ++i) out.push_back({'-', int(pre + i + 1), 0});
    for (size_t j = 0; j < m; ++j) out.push_back({'+', 0, int(pre + j + 1)});
  } else {
    // len[i][j]: the LCS length of a[pre+i..] and b[pre+j..] (lengths fit: walked, not stored, beyond the table)
    std::vector<uint32_t> len((n + 1) * (m + 1), 0);
    auto at = [&](size_t i, size_t j) -> uint32_t& { return len[i * (m + 1) + j]; };
    for (size_t i = n; i-- > 0;)
      for (size_t j = m; j-- > 0;) at(i, j) = a[pre + i] == b[pre + j] ? at(i + 1, j + 1) + 1 : std::max(at(i + 1, j), at(i, j + 1));
    size_t i = 0, j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && a[pre + i] == b[pre + j]) {
        out.push_back({' ', int(pre + i + 1), int(pre + j + 1)});
        ++i, ++j;
      } else if (i < n && (j == m || at(i + 1, j) >= at(i, j + 1))) {  // deletions before insertions, as diff prints them
        out.push_back({'-', int(pre + i + 1), 0});
        ++i;
      } else {
        out.push_back({'+', 0, int(pre + j + 1)});
        ++j;
      }
    }
  }
  for (size_t k = 0; k < suf; ++k) out.push_back({' ', int(a.size() - suf + k + 1), int(b.size() - suf + k + 1)});
  return out;
}

std::string judgings_text(const CandidateVersion& v) {
  std::string s;
  for (const VersionJudging& j : v.judgings)
    s += (s.empty() ? "" : ", ") + j.tool + " " + verdict_name(j.verdict) + " (turn " + std::to_string(j.turn) + ")";
  return s;
}

// Does `report` decide a version's figures over `current` (the one deciding so far)?
bool decides_over(const EvalReport& report, const CandidateVersion& v) {
  if (report.verdict != Verdict::pass) return v.judgings.empty() || v.outcome.verdict != SubmissionOutcome::Verdict::pass;
  return report.timing || v.outcome.verdict != SubmissionOutcome::Verdict::pass || v.outcome.candidate_ms.empty();
}

Json speedup_json(const std::optional<SpeedupEstimate>& s) {
  if (!s) return nullptr;
  return {{"point", s->point}, {"lo", s->lo}, {"hi", s->hi}, {"confidence", s->confidence}};
}

}  // namespace

bool CandidateVersion::verified() const {
  if (judgings.empty()) return false;
  for (const VersionJudging& j : judgings)
    if (j.verdict != Verdict::pass) return false;
  return true;
}

Json profile_figures(const EvalReport& report) {
  if (!report.profile) return nullptr;
  const ProfileSection& p = *report.profile;
  Json out = Json::object();
  if (p.unavailable) out["unavailable"] = *p.unavailable;
  if (p.kernel_time_ns) out["kernel_time_us"] = *p.kernel_time_ns / 1000.0;
  if (p.achieved) {
    out["achieved_gbps"] = p.achieved->gbps;
    out["dram_fraction"] = p.achieved->dram_fraction;
    out["achieved_tflops"] = p.achieved->tflops ? Json(*p.achieved->tflops) : Json();
  }
  Json kernels = Json::array();
  for (const ProfiledKernel& k : p.kernels)
    kernels.push_back({{"name", k.name},
                       {"duration_us", k.duration_ns / 1000.0},
                       {"occupancy", k.occupancy},
                       {"registers", k.registers},
                       {"shared_bytes", k.shared_bytes}});
  out["kernels"] = std::move(kernels);
  if (p.counters.unavailable) {
    out["counters"] = {{"unavailable", *p.counters.unavailable}};
  } else {
    Json counters = Json::array();
    for (const CounterKernel& k : p.counters.kernels) counters.push_back({{"range", k.range}, {"metrics", measured_map_json(k.metrics)}});
    out["counters"] = std::move(counters);
  }
  return out;
}

int CandidateHistory::record(const Candidate& candidate, const std::string& content_hash, const std::string& tool, int turn,
                             const EvalReport& report) {
  auto it = std::find_if(versions_.begin(), versions_.end(), [&](const CandidateVersion& v) { return v.content_hash == content_hash; });
  if (it == versions_.end()) {
    CandidateVersion v;
    v.number = static_cast<int>(versions_.size()) + 1;
    v.content_hash = content_hash;
    v.files.kind = candidate.kind;
    v.files.source = candidate.source;
    v.files.plan_text = candidate.plan_text;
    v.files.files = candidate.files;
    versions_.push_back(std::move(v));
    it = versions_.end() - 1;
  }
  CandidateVersion& v = *it;
  if (decides_over(report, v)) {
    v.outcome = submission_outcome(report);
    v.speedup = v.outcome.reported_speedup;
    v.candidate_ms = report.timing ? std::optional<double>(report.timing->candidate.median) : std::nullopt;
    v.eager_ms = report.timing ? std::optional<double>(report.timing->reference.median) : std::nullopt;
  }
  if (report.profile) v.counters = profile_figures(report);
  v.judgings.push_back({turn, tool, report.verdict});
  return v.number;
}

const CandidateVersion* CandidateHistory::find(int number) const {
  if (number < 1 || number > static_cast<int>(versions_.size())) return nullptr;
  return &versions_[number - 1];
}

std::string CandidateHistory::text() const {
  if (versions_.empty()) return "history: no version yet; every candidate that verify(), profile() or submit() judges becomes one\n";
  std::ostringstream os;
  os << "history: " << versions_.size() << " version(s) (restore(version) puts one back, diff(a, b) compares two, "
     << "submit(version=N) submits one)\n";
  for (const CandidateVersion& v : versions_) {
    os << "v" << v.number << "  " << verdict_name(v.last_verdict()) << (v.verified() ? "" : " (not verified)") << "  ";
    if (v.speedup)
      os << "speedup " << fixed(v.speedup->point, 3) << "x [" << fixed(v.speedup->lo, 3) << ", " << fixed(v.speedup->hi, 3) << "]";
    else
      os << "untimed";
    if (v.candidate_ms) os << ", " << fixed(*v.candidate_ms, 4) << " ms vs eager " << fixed(*v.eager_ms, 4) << " ms";
    os << "  " << judgings_text(v) << "  sha256 " << v.content_hash.substr(0, 12) << "\n";
  }
  return os.str();
}

Json CandidateHistory::to_json(bool with_files) const {
  Json out = Json::array();
  for (const CandidateVersion& v : versions_) {
    Json judgings = Json::array();
    for (const VersionJudging& j : v.judgings)
      judgings.push_back({{"turn", j.turn}, {"tool", j.tool}, {"verdict", verdict_name(j.verdict)}});
    Json e = {{"version", v.number},
              {"content_hash", v.content_hash},
              {"verdict", verdict_name(v.last_verdict())},
              {"verified", v.verified()},
              {"judgings", std::move(judgings)},
              {"speedup", speedup_json(v.speedup)},
              {"candidate_ms", v.candidate_ms ? Json(*v.candidate_ms) : Json()},
              {"eager_ms", v.eager_ms ? Json(*v.eager_ms) : Json()},
              {"counters", v.counters}};
    if (with_files) {
      e["kind"] = candidate_kind_name(v.files.kind);
      e["files"] = judged_files(v.files);
    }
    out.push_back(std::move(e));
  }
  return out;
}

std::string unified_diff(const std::string& a, const std::string& b, const std::string& from, const std::string& to, int context) {
  if (a == b) return "";
  std::vector<std::string> la = split_lines(a), lb = split_lines(b);
  std::vector<DiffLine> script = edit_script(la, lb);
  std::ostringstream os;
  os << "--- " << from << "\n+++ " << to << "\n";
  size_t k = 0;
  while (k < script.size()) {
    while (k < script.size() && script[k].op == ' ') ++k;
    if (k == script.size()) break;
    // A hunk: from `context` kept lines before the first change to `context` after the last change
    // that is followed by no other change within 2 * context kept lines.
    size_t start = k >= static_cast<size_t>(context) ? k - context : 0;
    size_t end = k;
    while (end < script.size()) {
      size_t kept = 0, look = end;
      while (look < script.size() && script[look].op == ' ' && kept <= static_cast<size_t>(2 * context)) ++look, ++kept;
      if (look == script.size() || kept > static_cast<size_t>(2 * context)) {
        end = std::min(script.size(), end + static_cast<size_t>(context));
        break;
      }
      end = look;
      while (end < script.size() && script[end].op != ' ') ++end;
    }
    int a_start = 0, b_start = 0, a_count = 0, b_count = 0;
    for (size_t i = start; i < end; ++i) {
      const DiffLine& d = script[i];
      if (d.op != '+') {
        if (!a_start) a_start = d.a;
        ++a_count;
      }
      if (d.op != '-') {
        if (!b_start) b_start = d.b;
        ++b_count;
      }
    }
    // An empty side names the line before it (unified diff's convention).
    if (!a_count) a_start = start < script.size() && start > 0 ? script[start - 1].a : 0;
    if (!b_count) b_start = start < script.size() && start > 0 ? script[start - 1].b : 0;
    os << "@@ -" << a_start << "," << a_count << " +" << b_start << "," << b_count << " @@\n";
    for (size_t i = start; i < end; ++i) {
      const DiffLine& d = script[i];
      os << d.op << (d.op == '+' ? lb[d.b - 1] : la[d.a - 1]) << "\n";
    }
    k = end;
  }
  return os.str();
}

std::string version_diff(const CandidateVersion& a, const CandidateVersion& b) {
  std::string va = "v" + std::to_string(a.number), vb = "v" + std::to_string(b.number);
  std::ostringstream os;
  os << "diff " << va << " " << vb << "\n";
  const std::map<std::string, std::string> fa = judged_files(a.files), fb = judged_files(b.files);
  std::set<std::string> names;
  for (const auto& [name, text] : fa) names.insert(name);
  for (const auto& [name, text] : fb) names.insert(name);
  for (const std::string& name : names) {
    auto ia = fa.find(name), ib = fb.find(name);
    if (ia == fa.end() || ib == fb.end()) {
      os << name << ": only in " << (ia == fa.end() ? vb : va) << "\n";
      continue;
    }
    std::string d = unified_diff(ia->second, ib->second, va + "/" + name, vb + "/" + name);
    os << (d.empty() ? name + ": unchanged\n" : d);
  }
  return os.str();
}

RewardResult choose_episode_reward(RewardFrom mode, const RewardResult& last, std::optional<int> last_version,
                                   const std::vector<VersionReward>& verified) {
  RewardResult chosen = last;
  std::optional<int> version = last_version;
  if (mode == RewardFrom::best_verified && last.rule != "cheat") {
    const VersionReward* best = nullptr;
    for (const VersionReward& v : verified)
      if (!best || v.reward.value >= best->reward.value) best = &v;
    if (best && best->reward.value > last.value) {
      chosen = best->reward;
      version = best->version;
      chosen.evidence["last"] = {{"rule", last.rule}, {"reward", last.value}};
      // The submission's own speedup over eager beside the best version's (kforge report's last-version figures).
      const auto& e = last.evidence;
      if (e.contains("eager") && e["eager"].is_object() && e["eager"].contains("speedup"))
        chosen.evidence["last"]["eager"] = {{"speedup", {{"point", e["eager"]["speedup"].value("point", 0.0)}}}};
    }
  }
  chosen.evidence["reward_from"] = reward_from_name(mode);
  chosen.evidence["version"] = version ? nlohmann::ordered_json(*version) : nlohmann::ordered_json();
  return chosen;
}

}  // namespace kforge
