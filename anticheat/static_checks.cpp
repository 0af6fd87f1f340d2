#include "anticheat/static_checks.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "anticheat/declarations.h"
#include "anticheat/macro_expander.h"
#include "configs/identifier.h"
#include "configs/yaml_reader.h"

namespace kforge {

// ---------------------------------------------------------------------------------------------
// Config

StaticCheckConfig StaticCheckConfig::from_yaml(const YamlNode& node) {
  StaticCheckConfig c;
  if (node.is_null()) return c;
  c.forbid_timers = node.get<bool>("forbid_timers", c.forbid_timers);
  c.forbid_inline_asm = node.get<bool>("forbid_inline_asm", c.forbid_inline_asm);
  c.forbid_printf = node.get<bool>("forbid_printf", c.forbid_printf);
  c.forbid_global_state = node.get<bool>("forbid_global_state", c.forbid_global_state);
  c.forbid_l2_residency = node.get<bool>("forbid_l2_residency", c.forbid_l2_residency);
  c.forbid_launch_identity = node.get<bool>("forbid_launch_identity", c.forbid_launch_identity);
  c.forbidden_identifiers = node.get<std::vector<std::string>>("forbidden_identifiers", c.forbidden_identifiers);
  for (const std::string& id : c.forbidden_identifiers)
    if (!is_identifier(id))
      node.at("forbidden_identifiers").fail("'" + id + "' is not an identifier (give plain names such as __trap, no '::')");
  node.check_no_unknown_keys();
  return c;
}

AnticheatConfig AnticheatConfig::from_yaml(const YamlNode& node) {
  AnticheatConfig c;
  if (node.is_null()) return c;
  if (auto n = node.find("static")) c.static_checks = StaticCheckConfig::from_yaml(*n);
  if (auto n = node.find("dynamic")) c.dynamic = DynamicCheckConfig::from_yaml(*n);
  node.check_no_unknown_keys();
  return c;
}

AnticheatConfig AnticheatConfig::load(const std::string& path) { return from_yaml(YamlNode::load_file(path, ErrorKind::config)); }

std::string format_finding(const CheckFinding& f) {
  std::ostringstream os;
  os << f.file << ":" << f.line << ": " << f.message;
  if (!f.evidence.empty()) os << "\n    " << f.evidence;
  return os.str();
}

namespace {

bool ident_char(char c) {  // in PTX text
  unsigned char u = static_cast<unsigned char>(c);
  return std::isalnum(u) || c == '_' || c == '$' || u >= 0x80;
}

// `__device__` and friends are, underneath, `__location__(device)` / `__attribute__((device))`;
// those spellings become the keyword they stand for.
std::vector<MacroToken> normalise_memory_spaces(const std::vector<MacroToken>& toks) {
  static const std::map<std::string, std::string> spaces = {
      {"device", "__device__"},     {"__device__", "__device__"},     {"managed", "__managed__"}, {"__managed__", "__managed__"},
      {"constant", "__constant__"}, {"__constant__", "__constant__"}, {"shared", "__shared__"},   {"__shared__", "__shared__"}};
  std::vector<MacroToken> out;
  for (size_t i = 0; i < toks.size(); ++i) {
    const MacroToken& t = toks[i];
    bool loc = t.is("__location__"), attr = t.is("__attribute__") || t.is("__attribute");
    if ((loc || attr) && i + 1 < toks.size() && toks[i + 1].is("(")) {
      size_t j = i + 1;
      int depth = 0;
      std::vector<MacroToken> found;
      for (; j < toks.size(); ++j) {
        if (toks[j].is("(")) ++depth;
        if (toks[j].is(")") && --depth == 0) break;
        auto s = toks[j].kind == TokenKind::identifier ? spaces.find(toks[j].text) : spaces.end();
        if (s != spaces.end()) {
          MacroToken k = toks[j];
          k.text = s->second;
          found.push_back(k);
        }
      }
      out.insert(out.end(), found.begin(), found.end());
      i = j;
      continue;
    }
    out.push_back(t);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Rules

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::vector<std::string> name_parts(const std::string& id) {
  std::vector<std::string> parts;
  std::string cur;
  for (char c : lower(id)) {
    if (c == '_') {
      if (!cur.empty()) parts.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  if (!cur.empty()) parts.push_back(cur);
  return parts;
}

enum class TimerKind { none, clock, sleep };

// Names of clocks, timers, counters and timed waits: clock, clock64, cuda::std::chrono,
// steady_clock, __nvvm_read_ptx_sreg_globaltimer, cuda::ptx::get_sreg_clock64, ..._pm0,
// __builtin_readcyclecounter, __nanosleep, sleep_for, barrier::try_wait_for (a timeout).
TimerKind timer_name(const std::string& id) {
  if (lower(id).find("globaltimer") != std::string::npos) return TimerKind::clock;
  for (const std::string& p : name_parts(id)) {
    if (p == "clock" || p == "clock64" || p == "chrono" || p == "readcyclecounter" || p == "readsteadycounter") return TimerKind::clock;
    if (p.size() == 3 && p[0] == 'p' && p[1] == 'm' && p[2] >= '0' && p[2] <= '7') return TimerKind::clock;
    if (p == "nanosleep") return TimerKind::sleep;
  }
  static const std::set<std::string> timed_waits = {"sleep_for", "sleep_until", "try_wait_for", "try_wait_until", "wait_for", "wait_until"};
  if (timed_waits.count(id)) return TimerKind::sleep;
  return TimerKind::none;
}

// Names of L2 residency / priority controls: cuda::access_property (and its persisting,
// streaming, normal members), cuda::annotated_ptr, cuda::apply_access_property,
// cuda::associate_access_property, cudaAccessPropertyPersisting, cudaAccessPolicyWindow, and any
// name spelling evict_last, createpolicy or cache_hint (cuda::ptx::ld_L1_evict_last_L2_cache_hint,
// EVICT_LAST, evictLast). Empty when the name is none of them; otherwise what it is.
std::string l2_residency_name(const std::string& id) {
  const std::string l = lower(id);
  std::string squeezed;  // without underscores: evictLast, EVICT_LAST and evict_last alike
  for (char c : l)
    if (c != '_') squeezed.push_back(c);
  if (squeezed.find("evictlast") != std::string::npos) return "an evict_last cache priority";
  if (squeezed.find("createpolicy") != std::string::npos) return "an L2 cache policy";
  if (squeezed.find("cachehint") != std::string::npos) return "an L2 cache-policy hint";
  if (squeezed.find("accessproperty") != std::string::npos || squeezed.find("accesspolicywindow") != std::string::npos)
    return "an L2 access property";
  if (squeezed.find("annotatedptr") != std::string::npos) return "an L2 access-property pointer";
  if (l == "persisting") return "the persisting access property";
  return "";
}

// %envreg0 .. %envreg31, the driver-defined registers.
bool is_envreg(const std::string& lw) {
  if (lw.size() < 7 || lw.size() > 8 || lw.compare(0, 6, "envreg") != 0) return false;
  for (size_t i = 6; i < lw.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(lw[i]))) return false;
  return std::stoi(lw.substr(6)) < 32;
}

// Names that read which launch a call is: __nvvm_read_ptx_sreg_gridid, cuda::ptx::get_sreg_gridid,
// __builtin_ptx_read_gridid (a register reader: a name with an sreg, ptx or nvvm part), and
// cudaGetCurrentGraphExec, cuda::ptx::get_sreg_current_graph_exec,
// __nvvm_read_ptx_sreg_current_graph_exec; and the readers of the driver-defined %envreg0..31
// (what the driver puts there per launch is not the harness's to fix, so no kernel may read it).
// A variable merely called gridid or current_graph_exec is not one of them. Empty when the name is
// none of them; otherwise the register it reads.
std::string launch_identity_name(const std::string& id) {
  const std::vector<std::string> parts = name_parts(id);
  bool reader = false, gridid = false;
  std::string envreg;
  for (const std::string& p : parts) {
    reader |= p == "sreg" || p == "ptx" || p == "nvvm";
    gridid |= p == "gridid";
    if (is_envreg(p)) envreg = p;
  }
  std::string squeezed;
  for (char c : lower(id))
    if (c != '_') squeezed.push_back(c);
  if (gridid && reader) return "%gridid";
  if (!envreg.empty() && reader) return "%" + envreg;
  if (squeezed.find("currentgraphexec") != std::string::npos && (reader || squeezed.find("getcurrentgraphexec") != std::string::npos))
    return "%current_graph_exec";
  return "";
}

const char* kLaunchRule =
    "reading the launch's identity is not allowed (the grid id numbers the launches on the GPU, so the "
    "distance between two calls' ids tells what the harness ran in between; a kernel's work may not depend on "
    "which call it is)";

const char* kL2Rule =
    "L2 residency hints are not allowed (the harness flushes the L2 before every timed call by writing "
    "twice its size at normal priority; lines marked evict_last or persisting may survive the flush, so the "
    "call would read warm data)";

const char* kTimerRule = "timing-dependent code is not allowed (a kernel's work may not depend on time)";
const char* kPrintfRule = "device printf is not allowed (it floods the log and is a side channel)";
const char* kStateRule =
    "state that persists between calls is not allowed (use a workspace buffer from launch.yaml; "
    "read-only tables may be __constant__, const or constexpr)";
const char* kHeapRule =
    "device heap memory outlives the call and can carry state between calls; use a workspace buffer "
    "from launch.yaml";

class StaticScan {
 public:
  explicit StaticScan(const StaticCheckConfig& config) : config_(config) {}

  StaticReport run(const std::string& source) {
    std::istringstream in(source);
    for (std::string line; std::getline(in, line);) lines_.push_back(line);
    PreprocessedSource pre = read_directives(lex_cuda(source));
    for (const MacroDefinition& d : pre.definitions)
      if (!d.undef) scan_macro_body(d);
    Expansion expanded = expand_macros(pre);
    if (expanded.overflowed) {
      std::ostringstream os;
      os << "macros expand beyond what can be checked (more than " << kMaxExpandedTokens << " tokens, nesting deeper than "
         << kMaxExpansionDepth << ", or unterminated macro calls): simplify the macros";
      add("macro_expansion", expanded.overflow_line, os.str());
    }
    toks_ = normalise_memory_spaces(concatenate_strings(std::move(expanded.tokens)));
    scan_identifiers(toks_, "");
    scan_declarations();  // first: the asm scan looks for the variables it finds
    scan_asm();
    scan_atomics();

    StaticReport report;
    std::sort(findings_.begin(), findings_.end(), [](const CheckFinding& a, const CheckFinding& b) {
      return std::tie(a.line, a.check, a.message) < std::tie(b.line, b.check, b.message);
    });
    for (CheckFinding& f : findings_) {
      if (!report.findings.empty() && report.findings.back().line == f.line && report.findings.back().check == f.check &&
          report.findings.back().message == f.message)
        continue;
      report.findings.push_back(std::move(f));
    }
    report.passed = report.findings.empty();
    return report;
  }

 private:
  std::string evidence(int line) const {
    if (line < 1 || line > static_cast<int>(lines_.size())) return "";
    std::string s = lines_[line - 1];
    size_t b = s.find_first_not_of(" \t\r");
    size_t e = s.find_last_not_of(" \t\r");
    s = b == std::string::npos ? "" : s.substr(b, e - b + 1);
    if (s.size() > 200) s = s.substr(0, 197) + "...";
    return s;
  }

  void add(const std::string& check, int line, const std::string& message) {
    CheckFinding f;
    f.check = check;
    f.file = "kernel.cu";
    f.line = line;
    f.evidence = evidence(line);
    f.message = message;
    findings_.push_back(std::move(f));
  }

  // " (through the macro 'T' defined on line 3)" for text a macro made; `in_macro` for a
  // #define body: " in the macro 'T'".
  static std::string where(const MacroToken& t, const std::string& in_macro) {
    if (!in_macro.empty()) return " in the macro '" + in_macro + "'";
    if (t.via_macro.empty()) return "";
    return " (through the macro '" + t.via_macro + "' defined on line " + std::to_string(t.via_line) + ")";
  }

  // Names: timers, printf, heap allocation, configured names.
  void scan_identifiers(const std::vector<MacroToken>& toks, const std::string& in_macro) {
    for (size_t i = 0; i < toks.size(); ++i) {
      const MacroToken& t = toks[i];
      if (t.kind != TokenKind::identifier) continue;
      const std::string w = where(t, in_macro);
      if (config_.forbid_timers) {
        TimerKind k = timer_name(t.text);
        if (k == TimerKind::clock) add("timer", t.line, "reads a GPU clock or timer ('" + t.text + "')" + w + ": " + kTimerRule);
        if (k == TimerKind::sleep) add("timer", t.line, "sleeps or waits with a timeout ('" + t.text + "')" + w + ": " + kTimerRule);
      }
      if (config_.forbid_l2_residency) {
        std::string what = l2_residency_name(t.text);
        if (!what.empty()) add("l2_residency", t.line, "uses " + what + " ('" + t.text + "')" + w + ": " + kL2Rule);
      }
      if (config_.forbid_launch_identity) {
        std::string reg = launch_identity_name(t.text);
        if (!reg.empty()) add("launch_identity", t.line, "reads " + reg + " ('" + t.text + "')" + w + ": " + kLaunchRule);
      }
      if (config_.forbid_printf && (t.text == "printf" || t.text == "vprintf" || t.text == "__builtin_printf"))
        add("printf", t.line, "prints from the device ('" + t.text + "')" + w + ": " + kPrintfRule);
      if (config_.forbid_global_state) {
        bool heap = t.text == "malloc" || t.text == "calloc" || t.text == "realloc" || t.text == "__nv_aligned_device_malloc" ||
                    t.text == "cudaMalloc" || t.text == "cudaMallocAsync";
        if (t.text == "new") heap = !placement_new(toks, i);
        if (heap) add("global_state", t.line, "allocates device heap memory ('" + t.text + "')" + w + ": " + kHeapRule);
      }
      for (const std::string& f : config_.forbidden_identifiers)
        if (t.text == f) add("forbidden_identifier", t.line, "uses '" + f + "'" + w + ", which is not allowed here");
      if (config_.forbid_inline_asm && is_asm(t))
        add("inline_asm", t.line, "uses inline assembly ('" + t.text + "')" + w + ": inline PTX is not allowed here");
    }
  }

  // `new (place) T` constructs in memory the kernel already has; any other new allocates.
  static bool placement_new(const std::vector<MacroToken>& toks, size_t i) {
    if (i + 1 >= toks.size() || !toks[i + 1].is("(")) return false;
    int depth = 0;
    size_t k = i + 1;
    for (; k < toks.size(); ++k) {
      if (toks[k].is("(")) ++depth;
      if (toks[k].is(")") && --depth == 0) break;
    }
    return k + 1 < toks.size() && (toks[k + 1].kind == TokenKind::identifier || toks[k + 1].is("::"));
  }

  static bool is_asm(const MacroToken& t) { return t.is("asm") || t.is("__asm__") || t.is("__asm"); }

  // A #define body, used or not: its names, and PTX register names in its string literals.
  void scan_macro_body(const MacroDefinition& d) {
    std::vector<MacroToken> body = concatenate_strings(d.body);
    scan_identifiers(body, d.name);
    if (!config_.forbid_timers && !config_.forbid_launch_identity) return;
    for (const MacroToken& t : body)
      if (t.kind == TokenKind::string) scan_ptx(t, d.name, /*registers_need_percent=*/true);
  }

  // PTX text (an asm template, or a string that may become one).
  void scan_ptx(const MacroToken& t, const std::string& in_macro, bool registers_need_percent) {
    const std::string& s = t.value;
    const std::string w = where(t, in_macro);
    auto line_at = [&](size_t p) { return p < t.value_lines.size() && t.value_lines[p] > 0 ? t.value_lines[p] : t.line; };
    for (size_t p = 0; p < s.size();) {
      if (s[p] == '#' && config_.forbid_timers && !registers_need_percent) {
        add("timer", line_at(p),
            "inline PTX uses a preprocessor directive or token pasting ('#')" + w +
                ": not allowed in inline assembly, where it can hide a timer read");
        ++p;
        continue;
      }
      if (!ident_char(s[p])) {
        ++p;
        continue;
      }
      size_t b = p;
      while (p < s.size() && ident_char(s[p])) ++p;
      const std::string word = s.substr(b, p - b);
      const bool percent = b > 0 && s[b - 1] == '%';
      const bool dot = b > 0 && s[b - 1] == '.';
      if (config_.forbid_timers && (percent || !registers_need_percent)) {
        const std::string lw = lower(word);
        if (lw.find("globaltimer") != std::string::npos) {
          add("timer", line_at(b), "reads the GPU timer (%" + word + ") in inline PTX" + w + ": " + kTimerRule);
        } else if (lw == "clock" || lw == "clock64" || lw == "clock_hi") {
          add("timer", line_at(b), "reads the SM clock (%" + word + ") in inline PTX" + w + ": " + kTimerRule);
        } else if (percent && lw.size() >= 3 && lw[0] == 'p' && lw[1] == 'm' && std::isdigit(static_cast<unsigned char>(lw[2]))) {
          add("timer", line_at(b), "reads a performance counter (%" + word + ") in inline PTX" + w + ": " + kTimerRule);
        } else if (lw == "nanosleep") {
          add("timer", line_at(b), "sleeps (nanosleep) in inline PTX" + w + ": " + kTimerRule);
        }
      }
      if (config_.forbid_launch_identity && (percent || !registers_need_percent)) {
        // mov.u64 %0, %%gridid; mov.u64 %0, %%current_graph_exec;
        const std::string lw = lower(word);
        if (lw == "gridid")
          add("launch_identity", line_at(b), "reads the launch's grid id (%" + word + ") in inline PTX" + w + ": " + kLaunchRule);
        else if (lw == "current_graph_exec")
          add("launch_identity", line_at(b), "reads the running graph's handle (%" + word + ") in inline PTX" + w + ": " + kLaunchRule);
        else if (is_envreg(lw))
          add("launch_identity", line_at(b), "reads a driver-defined register (%" + word + ") in inline PTX" + w + ": " + kLaunchRule);
      }
      if (config_.forbid_l2_residency && !registers_need_percent) {
        // createpolicy.fractional.L2::evict_last.b64, ld.global.L2::evict_last, prefetch.global.L2::evict_last,
        // ld.global.L2::cache_hint (a policy operand), cp.async.bulk...L2::cache_hint.
        const std::string lw = lower(word);
        if (lw == "createpolicy")
          add("l2_residency", line_at(b), "creates an L2 cache policy (createpolicy) in inline PTX" + w + ": " + kL2Rule);
        else if (lw == "evict_last")
          add("l2_residency", line_at(b), "asks for evict_last cache priority in inline PTX" + w + ": " + kL2Rule);
        else if (lw == "cache_hint")
          add("l2_residency", line_at(b), "passes an L2 cache policy (.L2::cache_hint) in inline PTX" + w + ": " + kL2Rule);
      }
      if (config_.forbid_global_state && !registers_need_percent) {
        // `.global` right after a space, `;` or `{` declares a variable; in an instruction it
        // follows the mnemonic (ld.global, cvta.to.global).
        if (dot && word == "global" && (b < 2 || !ident_char(s[b - 2])))
          add("global_state", line_at(b), "declares a .global variable in inline PTX" + w + ": " + kStateRule);
        if (state_names_.count(word))
          add("global_state", line_at(b), "uses the persistent variable '" + word + "' in inline PTX" + w + ": " + kStateRule);
      }
    }
  }

  // Every asm statement: its string literals are the PTX.
  void scan_asm() {
    std::vector<size_t> strings;
    for (size_t i = 0; i < toks_.size(); ++i) {
      if (!is_asm(toks_[i])) continue;
      size_t k = i + 1;
      while (k < toks_.size() && toks_[k].kind == TokenKind::identifier &&
             (toks_[k].is("volatile") || toks_[k].is("__volatile__") || toks_[k].is("goto") || toks_[k].is("inline")))
        ++k;
      if (k >= toks_.size() || !toks_[k].is("(")) continue;
      int depth = 0;
      for (; k < toks_.size(); ++k) {
        if (toks_[k].is("(")) ++depth;
        if (toks_[k].is(")") && --depth == 0) break;
        if (toks_[k].kind == TokenKind::string) strings.push_back(k);
      }
    }
    for (size_t k : strings) scan_ptx(toks_[k], "", false);
  }

  // Mutable variables with static storage duration (declarations.h).
  void scan_declarations() {
    if (!config_.forbid_global_state) return;
    for (const PersistentVariable& v : persistent_variables(toks_)) {
      state_names_.insert(v.name);
      std::string what = v.storage == PersistentVariable::managed  ? "declares the __managed__ variable '" + v.name + "'"
                         : v.storage == PersistentVariable::device ? "declares the mutable __device__ variable '" + v.name + "'"
                                                                   : "declares the static variable '" + v.name + "'";
      add("global_state", v.at->line, what + where(*v.at, "") + ": " + kStateRule);
    }
  }

  // atomicAdd(&calls, 1) and the like on a variable found above.
  void scan_atomics() {
    if (!config_.forbid_global_state || state_names_.empty()) return;
    for (size_t i = 0; i + 1 < toks_.size(); ++i) {
      const MacroToken& t = toks_[i];
      if (t.kind != TokenKind::identifier || !(t.text.rfind("atomic", 0) == 0 || t.text.rfind("__atomic", 0) == 0)) continue;
      if (!toks_[i + 1].is("(")) continue;
      int depth = 0;
      for (size_t k = i + 1; k < toks_.size(); ++k) {
        if (toks_[k].is("(")) ++depth;
        if (toks_[k].is(")") && --depth == 0) break;
        if (depth == 1 && toks_[k].is(",")) break;  // the first argument: the address
        if (toks_[k].kind == TokenKind::identifier && state_names_.count(toks_[k].text)) {
          add("global_state", t.line,
              "changes the persistent variable '" + toks_[k].text + "' ('" + t.text + "')" + where(t, "") + ": " + kStateRule);
          break;
        }
      }
    }
  }

  const StaticCheckConfig& config_;
  std::vector<std::string> lines_;
  std::vector<MacroToken> toks_;
  std::set<std::string> state_names_;
  std::vector<CheckFinding> findings_;
};

}  // namespace

StaticReport run_static_checks(const std::string& kernel_source, const std::string& launch_yaml, const StaticCheckConfig& config) {
  (void)launch_yaml;
  return StaticScan(config).run(kernel_source);
}

}  // namespace kforge
