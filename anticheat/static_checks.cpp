#include "anticheat/static_checks.h"

#include "anticheat/macro_expander.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "configs/yaml_reader.h"

namespace kforge {

// ---------------------------------------------------------------------------------------------
// Config

static bool is_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

StaticCheckConfig StaticCheckConfig::from_yaml(const YamlNode& node) {
  StaticCheckConfig c;
  if (node.is_null()) return c;
  c.forbid_timers = node.get<bool>("forbid_timers", c.forbid_timers);
  c.forbid_inline_asm = node.get<bool>("forbid_inline_asm", c.forbid_inline_asm);
  c.forbid_printf = node.get<bool>("forbid_printf", c.forbid_printf);
  c.forbid_global_state = node.get<bool>("forbid_global_state", c.forbid_global_state);
  c.forbid_l2_residency = node.get<bool>("forbid_l2_residency", c.forbid_l2_residency);
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

AnticheatConfig AnticheatConfig::load(const std::string& path) {
  return from_yaml(YamlNode::load_file(path, ErrorKind::config));
}

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
      {"device", "__device__"},     {"__device__", "__device__"},     {"managed", "__managed__"},
      {"__managed__", "__managed__"}, {"constant", "__constant__"},   {"__constant__", "__constant__"},
      {"shared", "__shared__"},     {"__shared__", "__shared__"}};
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
    if (p == "clock" || p == "clock64" || p == "chrono" || p == "readcyclecounter" || p == "readsteadycounter")
      return TimerKind::clock;
    if (p.size() == 3 && p[0] == 'p' && p[1] == 'm' && p[2] >= '0' && p[2] <= '7') return TimerKind::clock;
    if (p == "nanosleep") return TimerKind::sleep;
  }
  static const std::set<std::string> timed_waits = {"sleep_for", "sleep_until", "try_wait_for", "try_wait_until",
                                                    "wait_for", "wait_until"};
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

bool is_keyword(const std::string& w) {
  static const std::set<std::string> k = {
      "void", "bool", "char", "short", "int", "long", "float", "double", "signed", "unsigned", "auto",
      "wchar_t", "char8_t", "char16_t", "char32_t", "const", "volatile", "constexpr", "consteval",
      "constinit", "static", "extern", "inline", "register", "mutable", "thread_local", "struct", "class",
      "union", "enum", "typename", "template", "typedef", "using", "friend", "virtual", "explicit",
      "__device__", "__host__", "__global__", "__forceinline__", "__noinline__", "__inline__",
      "__managed__", "__constant__", "__shared__", "__restrict__", "__restrict", "restrict",
      "__grid_constant__", "operator", "decltype", "sizeof", "alignof", "noexcept", "return", "new",
      "delete", "this", "true", "false", "nullptr"};
  return k.count(w) > 0;
}

// Attribute-like words followed by a parenthesised argument that is not a declarator.
bool is_attribute(const std::string& w) {
  static const std::set<std::string> a = {
      "__align__", "__launch_bounds__", "__attribute__", "__attribute", "alignas", "__declspec",
      "decltype", "__cluster_dims__", "__maxnreg__", "__location__", "noexcept", "throw", "__typeof__",
      "typeof", "_Alignas"};
  return a.count(w) > 0;
}

using Stmt = std::vector<const MacroToken*>;

const MacroToken& braces_marker() {
  static const MacroToken t = [] {
    MacroToken m;
    m.kind = TokenKind::punctuator;
    m.text = "{}";
    return m;
  }();
  return t;
}

// Index of the `)` matching the `(` at `open`, or stmt.size().
size_t matching(const Stmt& s, size_t open) {
  int depth = 0;
  for (size_t k = open; k < s.size(); ++k) {
    if (s[k]->is("(") || s[k]->is("[")) ++depth;
    if ((s[k]->is(")") || s[k]->is("]")) && --depth == 0) return k;
  }
  return s.size();
}

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
      os << "macros expand beyond what can be checked (more than " << kMaxExpandedTokens
         << " tokens, nesting deeper than " << kMaxExpansionDepth
         << ", or unterminated macro calls): simplify the macros";
      add("macro_expansion", expanded.overflow_line, os.str());
    }
    toks_ = normalise_memory_spaces(concatenate_strings(std::move(expanded.tokens)));
    collect_type_names();
    scan_identifiers(toks_, "");
    scan_declarations();  // first: the asm scan looks for the variables it finds
    scan_asm();
    scan_atomics();

    StaticReport report;
    std::sort(findings_.begin(), findings_.end(), [](const CheckFinding& a, const CheckFinding& b) {
      return std::tie(a.line, a.check, a.message) < std::tie(b.line, b.check, b.message);
    });
    for (CheckFinding& f : findings_) {
      if (!report.findings.empty() && report.findings.back().line == f.line &&
          report.findings.back().check == f.check && report.findings.back().message == f.message)
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
      if (config_.forbid_printf && (t.text == "printf" || t.text == "vprintf" || t.text == "__builtin_printf"))
        add("printf", t.line, "prints from the device ('" + t.text + "')" + w + ": " + kPrintfRule);
      if (config_.forbid_global_state) {
        bool heap = t.text == "malloc" || t.text == "calloc" || t.text == "realloc" ||
                    t.text == "__nv_aligned_device_malloc" || t.text == "cudaMalloc" || t.text == "cudaMallocAsync";
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
    if (!config_.forbid_timers) return;
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

  // Type names the source declares (for telling `T f(U);` from `T v(x);`).
  void collect_type_names() {
    static const char* builtin[] = {
        "size_t", "ptrdiff_t", "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t",
        "uint64_t", "intptr_t", "uintptr_t", "half", "__half", "__half2", "__nv_bfloat16", "__nv_bfloat162",
        "nv_bfloat16", "float2", "float3", "float4", "double2", "int2", "int3", "int4", "uint2", "uint3", "uint4",
        "char2", "char4", "uchar4", "short2", "longlong2", "ulonglong2", "dim3"};
    for (const char* b : builtin) types_.insert(b);
    for (size_t i = 0; i + 1 < toks_.size(); ++i) {
      const MacroToken& t = toks_[i];
      if ((t.is("struct") || t.is("class") || t.is("union") || t.is("enum") || t.is("typename")) &&
          toks_[i + 1].kind == TokenKind::identifier)
        types_.insert(toks_[i + 1].text);
      if (t.is("using") && i + 2 < toks_.size() && toks_[i + 1].kind == TokenKind::identifier && toks_[i + 2].is("="))
        types_.insert(toks_[i + 1].text);
      if (t.is("typedef"))
        for (size_t k = i + 1; k < toks_.size() && !toks_[k].is(";"); ++k)
          if (toks_[k].kind == TokenKind::identifier && k + 1 < toks_.size() && toks_[k + 1].is(";")) types_.insert(toks_[k].text);
    }
  }

  // Whether a parenthesised list [open+1, close) reads as parameters (`float x, const T*`)
  // rather than initialisers (`0`, `x + 1`).
  bool parameter_list(const Stmt& s, size_t open, size_t close) const {
    if (close == open + 1) return true;
    size_t b = open + 1;
    int depth = 0;
    for (size_t k = open + 1; k <= close; ++k) {
      bool end = k == close || (depth == 0 && s[k]->is(","));
      if (!end) {
        if (s[k]->is("(") || s[k]->is("[") || s[k]->is("<")) ++depth;
        if (s[k]->is(")") || s[k]->is("]") || s[k]->is(">")) --depth;
        continue;
      }
      if (!parameter(s, b, k)) return false;
      b = k + 1;
    }
    return true;
  }

  bool parameter(const Stmt& s, size_t b, size_t e) const {
    for (size_t k = b; k < e; ++k)
      if (s[k]->is("=")) e = k;  // a default argument
    if (b >= e) return false;
    if (e == b + 1) {
      const MacroToken& t = *s[b];
      return t.is("...") || (t.kind == TokenKind::identifier && (is_keyword(t.text) || types_.count(t.text)));
    }
    if (s[b]->kind != TokenKind::identifier && !s[b]->is("::")) return false;
    int nest = 0;  // [] and <> may hold numbers
    for (size_t k = b; k < e; ++k) {
      const MacroToken& t = *s[k];
      if (t.is("[") || t.is("<")) ++nest;
      if (t.is("]") || t.is(">")) --nest;
      if (t.kind == TokenKind::identifier) continue;
      if (t.kind == TokenKind::number && nest > 0) continue;
      static const std::set<std::string> ok = {"*", "&", "&&", "::", "<", ">", ",", "[", "]", "(", ")", "...", ">>"};
      if (t.kind == TokenKind::punctuator && ok.count(t.text)) continue;
      return false;
    }
    return true;
  }

  struct Declared {
    std::string name;
    bool is_mutable = false;
    int line = 0;
  };

  // The variables a declaration statement declares (none for a function declaration).
  std::vector<Declared> declared_variables(const Stmt& stmt) const {
    Stmt d;
    for (size_t k = 0; k < stmt.size(); ++k) {
      const MacroToken& t = *stmt[k];
      if (t.is("template") && k + 1 < stmt.size() && stmt[k + 1]->is("<")) {  // template <...>
        int depth = 0;
        for (++k; k < stmt.size(); ++k) {
          if (stmt[k]->is("<")) ++depth;
          if (stmt[k]->is(">") && --depth == 0) break;
          if (stmt[k]->is(">>") && (depth -= 2) <= 0) break;
        }
        continue;
      }
      if (t.kind == TokenKind::identifier && is_attribute(t.text) && k + 1 < stmt.size() && stmt[k + 1]->is("(")) {
        k = matching(stmt, k + 1);
        continue;
      }
      if (t.is("[") && k + 1 < stmt.size() && stmt[k + 1]->is("[")) {  // [[attribute]]
        k = matching(stmt, k);
        continue;
      }
      if (t.kind == TokenKind::string || t.is("extern")) continue;  // extern "C"
      d.push_back(&t);
    }
    // A function declarator: the first `(` after a name, holding parameters; `operator...(`.
    for (size_t k = 0; k < d.size(); ++k) {
      if (d[k]->is("=") || d[k] == &braces_marker()) break;
      if (d[k]->is("operator")) return {};
      if (!d[k]->is("(")) continue;
      if (k > 0 && d[k - 1]->kind == TokenKind::identifier && !is_keyword(d[k - 1]->text) && parameter_list(d, k, matching(d, k)))
        return {};
      break;
    }
    // Declarators, split at top-level commas; the first carries the specifiers.
    std::vector<Declared> out;
    bool spec_const = false;
    size_t b = 0;
    int depth = 0;
    for (size_t k = 0; k <= d.size(); ++k) {
      bool end = k == d.size() || (depth == 0 && d[k]->is(","));
      if (!end) {
        if (d[k]->is("(") || d[k]->is("[") || d[k]->is("<")) ++depth;
        if (d[k]->is(")") || d[k]->is("]") || d[k]->is(">")) --depth;
        continue;
      }
      Declared v = declarator(d, b, k, out.empty(), spec_const);
      if (!v.name.empty()) out.push_back(v);
      b = k + 1;
    }
    return out;
  }

  Declared declarator(const Stmt& d, size_t b, size_t e, bool first, bool& spec_const) const {
    Declared v;
    // Up to the initialiser: `= ...`, `{...}`, or `(args)` after the declarator's name. The first
    // name with no type before it is the type (`MyT (v)` declares v); a class body is skipped.
    static const std::set<std::string> type_keywords = {"void", "bool", "char", "short", "int", "long", "float",
                                                        "double", "signed", "unsigned", "auto", "wchar_t"};
    size_t stop = e;
    bool class_head = false, typed = false, name_is_declarator = false;
    for (size_t k = b; k < e; ++k) {
      const MacroToken& t = *d[k];
      if (t.is("struct") || t.is("class") || t.is("union") || t.is("enum")) {
        class_head = typed = true;
        continue;
      }
      if (&t == &braces_marker() && class_head) {  // `struct S {...} v`
        class_head = false;
        v.name.clear();
        continue;
      }
      if (t.is("=") || &t == &braces_marker() ||
          (t.is("(") && name_is_declarator && k > b && d[k - 1]->kind == TokenKind::identifier && d[k - 1]->text == v.name)) {
        stop = k;
        break;
      }
      if (t.is("[")) {
        k = matching(d, k);
        continue;
      }
      if (t.kind == TokenKind::identifier && type_keywords.count(t.text)) typed = true;
      if (t.kind == TokenKind::identifier && !is_keyword(t.text)) {
        bool qualified = k > b && d[k - 1]->is("::");
        name_is_declarator = typed && !qualified && !class_head;
        typed = true;
        v.name = t.text;
        v.line = t.line;
      }
    }
    bool constexpr_ = false, const_before = false, const_after = false;
    const MacroToken* last_indirection = nullptr;
    for (size_t k = b; k < stop; ++k) {
      const MacroToken& t = *d[k];
      if (t.is("constexpr") || t.is("consteval")) constexpr_ = true;
      if (t.is("*") || t.is("&") || t.is("&&")) {
        last_indirection = &t;
        const_after = false;
      }
      if (t.is("const")) (last_indirection ? const_after : const_before) = true;
    }
    if (first) spec_const = const_before || constexpr_;
    if (!first) const_before = const_before || spec_const;
    bool is_const;
    if (constexpr_) {
      is_const = true;
    } else if (last_indirection && last_indirection->is("*")) {
      is_const = const_after;
    } else {
      is_const = const_before;
    }
    v.is_mutable = !is_const;
    return v;
  }

  static bool has(const Stmt& s, const char* word) {
    return std::any_of(s.begin(), s.end(), [&](const MacroToken* t) { return t->is(word); });
  }

  // A statement that ended at `;`: mutable variables with static storage duration.
  void declaration(const Stmt& full) {
    if (!config_.forbid_global_state || full.empty()) return;
    // Inside an unclosed `(` (for (...; / if (...;) the declaration starts after it.
    size_t from = 0;
    std::vector<size_t> opens;
    for (size_t k = 0; k < full.size(); ++k) {
      if (full[k]->is("(")) opens.push_back(k);
      if (full[k]->is(")") && !opens.empty()) opens.pop_back();
    }
    if (!opens.empty()) from = opens.front() + 1;
    Stmt s(full.begin() + static_cast<long>(from), full.end());
    if (s.empty()) return;
    // Storage words count in the specifiers only (before `=`, `(`, a brace group).
    bool is_static = false, device = false, managed = false;
    for (const MacroToken* t : s) {
      if (t->is("=") || t->is("(") || t == &braces_marker()) break;
      is_static |= t->is("static");
      device |= t->is("__device__");
      managed |= t->is("__managed__");
    }
    if (!(is_static || device || managed)) return;
    if (has(s, "__shared__") || has(s, "__constant__") || has(s, "typedef") || has(s, "using") || has(s, "friend") ||
        has(s, "static_assert"))
      return;
    for (const Declared& v : declared_variables(s)) {
      if (!v.is_mutable) continue;
      state_names_.insert(v.name);
      std::string what = managed ? "declares the __managed__ variable '" + v.name + "'"
                         : device ? "declares the mutable __device__ variable '" + v.name + "'"
                                  : "declares the static variable '" + v.name + "'";
      const MacroToken* at = s.front();
      for (const MacroToken* t : s)
        if (t->kind == TokenKind::identifier && t->text == v.name) {
          at = t;
          break;
        }
      add("global_state", at->line, what + where(*at, "") + ": " + kStateRule);
    }
  }

  enum class Scope { ns, cls, fn, init };

  bool function_like_head(const Stmt& s) const {
    size_t e = s.size();
    // A trailing return type: cut at the last top-level `->` after the parameter list.
    int depth = 0;
    for (size_t k = 0; k < e; ++k) {
      if (s[k]->is("(") || s[k]->is("[")) ++depth;
      if (s[k]->is(")") || s[k]->is("]")) --depth;
      if (depth == 0 && s[k]->is("->") && k > 0 && s[k - 1]->is(")")) {
        e = k;
        break;
      }
    }
    static const std::set<std::string> trailing = {"const", "volatile", "override", "final", "mutable", "&", "&&",
                                                   "__device__", "__host__", "constexpr", "noexcept"};
    while (e > 0) {
      const MacroToken& t = *s[e - 1];
      if (trailing.count(t.text)) {
        --e;
      } else if (t.is(")")) {  // noexcept(...) / throw(...)
        int d = 0;
        size_t k = e;
        while (k > 0) {
          --k;
          if (s[k]->is(")")) ++d;
          if (s[k]->is("(") && --d == 0) break;
        }
        if (k > 0 && (s[k - 1]->is("noexcept") || s[k - 1]->is("throw"))) {
          e = k - 1;
        } else {
          return true;
        }
      } else {
        break;
      }
    }
    if (e == 0) return false;
    if (s[e - 1]->is("]")) return true;  // a lambda without parameters
    // A constructor's member initialiser ending in a brace group: `S() : a{0} {`.
    if (s[e - 1] == &braces_marker())
      for (size_t k = 1; k < e; ++k)
        if (s[k]->is(":") && s[k - 1]->is(")")) return true;
    return false;
  }

  Scope classify(const Stmt& s, Scope parent) const {
    bool class_key = has(s, "struct") || has(s, "class") || has(s, "union") || has(s, "enum");
    if (parent == Scope::fn || parent == Scope::init) return class_key && !function_like_head(s) ? Scope::cls : Scope::fn;
    if (has(s, "namespace")) return Scope::ns;
    if (s.size() == 2 && s[0]->is("extern") && s[1]->kind == TokenKind::string) return Scope::ns;
    if (function_like_head(s)) return Scope::fn;
    if (class_key) return Scope::cls;
    return Scope::init;
  }

  // Walks the braces, finding each statement's end; declarations are judged alike in every
  // scope (a scope misread through an unbalanced #else cannot hide a static).
  void scan_declarations() {
    struct Frame {
      Scope kind;
      Stmt stmt;
    };
    std::vector<Frame> stack{{Scope::ns, {}}};
    for (size_t i = 0; i < toks_.size(); ++i) {
      const MacroToken& t = toks_[i];
      Frame& f = stack.back();
      if (t.is("{")) {
        Scope kind = classify(f.stmt, f.kind);
        f.stmt.push_back(&braces_marker());
        stack.push_back({kind, {}});
      } else if (t.is("}")) {
        if (stack.size() == 1) continue;
        Scope kind = stack.back().kind;
        stack.pop_back();
        Frame& parent = stack.back();
        bool continues = kind == Scope::cls || kind == Scope::init;
        if (kind == Scope::fn && i + 1 < toks_.size()) {
          static const std::set<std::string> after_lambda = {"(", ")", ",", ";", ".", "->", "[", "]"};
          continues = toks_[i + 1].kind == TokenKind::punctuator && after_lambda.count(toks_[i + 1].text);
        }
        if (!continues) parent.stmt.clear();
      } else if (t.is(";")) {
        declaration(f.stmt);
        f.stmt.clear();
      } else {
        f.stmt.push_back(&t);
      }
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
  std::set<std::string> types_;
  std::set<std::string> state_names_;
  std::vector<CheckFinding> findings_;
};

}  // namespace

StaticReport run_static_checks(const std::string& kernel_source, const std::string& launch_yaml,
                               const StaticCheckConfig& config) {
  (void)launch_yaml;
  return StaticScan(config).run(kernel_source);
}

}  // namespace kforge
