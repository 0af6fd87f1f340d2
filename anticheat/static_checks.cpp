#include "anticheat/static_checks.h"

#include "anticheat/source_text.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <deque>
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

// ---------------------------------------------------------------------------------------------
// Tokens

enum class Tk { ident, number, string, chr, punct, directive, placemarker };

struct Token {
  Tk kind = Tk::punct;
  std::string text;              // spelling; identifiers with UCNs decoded, digraphs normalised
  std::string value;             // string literals: the decoded bytes
  std::vector<int> value_lines;  // string literals: the line of each byte of `value`
  int line = 0;
  bool space_before = false;
  int directive = -1;            // Tk::directive: index into Lexed::directives
  std::vector<int> hide;         // sorted ids of macros this token may not expand again
  std::string via_macro;         // outermost macro whose expansion made the token ("" = as written)
  int via_line = 0;              // that macro's #define line

  bool is(const char* p) const { return (kind == Tk::punct || kind == Tk::ident) && text == p; }
};

struct Directive {
  bool undef = false;
  std::string name;
  bool function_like = false;
  std::vector<std::string> params;  // a variadic macro's last parameter is __VA_ARGS__ or its name
  bool variadic = false;
  std::vector<Token> body;
  int line = 0;
};

struct Lexed {
  std::vector<Token> code;  // with Tk::directive tokens where #define / #undef stood
  std::vector<Directive> directives;
};

bool ident_start(char c) {
  unsigned char u = static_cast<unsigned char>(c);
  return std::isalpha(u) || c == '_' || c == '$' || u >= 0x80;
}
bool ident_char(char c) {
  unsigned char u = static_cast<unsigned char>(c);
  return std::isalnum(u) || c == '_' || c == '$' || u >= 0x80;
}
bool hspace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }
bool hex_digit(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }
unsigned long hex_value(char c) {
  return std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : std::tolower(static_cast<unsigned char>(c)) - 'a' + 10;
}

void append_utf8(std::string& out, unsigned long cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | ((cp >> 18) & 0x07)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// Punctuators, longest first; digraphs map to what they stand for.
const std::vector<std::pair<const char*, const char*>>& punctuators() {
  static const std::vector<std::pair<const char*, const char*>> p = {
      {"%:%:", "##"}, {"...", "..."}, {"<<=", "<<="}, {">>=", ">>="}, {"->*", "->*"}, {"<=>", "<=>"},
      {"##", "##"},   {"%:", "#"},    {"<%", "{"},    {"%>", "}"},    {"<:", "["},    {":>", "]"},
      {"::", "::"},   {"->", "->"},   {"<<", "<<"},   {">>", ">>"},   {"<=", "<="},   {">=", ">="},
      {"==", "=="},   {"!=", "!="},   {"&&", "&&"},   {"||", "||"},   {"++", "++"},   {"--", "--"},
      {"+=", "+="},   {"-=", "-="},   {"*=", "*="},   {"/=", "/="},   {"%=", "%="},   {"&=", "&="},
      {"|=", "|="},   {"^=", "^="},   {".*", ".*"},
  };
  return p;
}

class Lexer {
 public:
  explicit Lexer(const std::string& source) : t_(splice_lines(source)) {}

  Lexed run() {
    const std::string& s = t_.chars;
    bool line_start = true, space = false;
    size_t i = 0;
    while (i < s.size()) {
      char c = s[i];
      if (c == '\n') {
        line_start = space = true;
        ++i;
      } else if (hspace(c)) {
        space = true;
        ++i;
      } else if (skip_comment(i)) {
        space = true;  // a comment is one space; it does not start a line
      } else if (line_start && (c == '#' || (c == '%' && i + 1 < s.size() && s[i + 1] == ':' &&
                                             !(i + 3 < s.size() && s[i + 2] == '%' && s[i + 3] == ':')))) {
        i += c == '#' ? 1 : 2;
        directive(i);
        line_start = space = true;
      } else {
        line_start = false;
        Token t;
        if (lex_one(i, s.size(), t)) {
          t.space_before = space;
          if (!skipping()) out_.code.push_back(std::move(t));
        }
        space = false;
      }
    }
    return std::move(out_);
  }

  // Lexes `text` (a ## result) into tokens, all on `line`.
  static std::vector<Token> lex_text(const std::string& text, int line) {
    Lexer l(text);
    std::vector<Token> out;
    size_t i = 0;
    bool space = false;
    while (i < l.t_.chars.size()) {
      if (hspace(l.t_.chars[i]) || l.t_.chars[i] == '\n') {
        space = true;
        ++i;
        continue;
      }
      Token t;
      if (l.lex_one(i, l.t_.chars.size(), t)) {
        t.line = line;
        std::fill(t.value_lines.begin(), t.value_lines.end(), line);
        t.space_before = space;
        out.push_back(std::move(t));
      }
      space = false;
    }
    return out;
  }

 private:
  int line_of(size_t i) const {
    if (t_.lines.empty()) return 1;
    return t_.lines[std::min(i, t_.lines.size() - 1)];
  }

  bool skip_comment(size_t& i) const { return kforge::skip_comment(t_.chars, i); }

  // Decodes the escapes of a (non-raw) literal's content [b, e) into value / value_lines.
  void decode(size_t b, size_t e, Token& t) const {
    const std::string& s = t_.chars;
    for (size_t i = b; i < e;) {
      int line = line_of(i);
      if (s[i] != '\\' || i + 1 >= e) {
        t.value.push_back(s[i++]);
        t.value_lines.push_back(line);
        continue;
      }
      char c = s[i + 1];
      if (c == 'x') {
        unsigned long v = 0;
        size_t j = i + 2;
        while (j < e && hex_digit(s[j])) v = v * 16 + hex_value(s[j++]);
        t.value.push_back(static_cast<char>(v & 0xFF));
        i = j;
      } else if (c >= '0' && c <= '7') {
        unsigned long v = 0;
        size_t j = i + 1;
        while (j < e && j < i + 4 && s[j] >= '0' && s[j] <= '7') v = v * 8 + (s[j++] - '0');
        t.value.push_back(static_cast<char>(v & 0xFF));
        i = j;
      } else if ((c == 'u' || c == 'U') && i + 2 < e) {
        size_t n = c == 'u' ? 4 : 8, j = i + 2;
        unsigned long v = 0;
        while (j < e && j < i + 2 + n && hex_digit(s[j])) v = v * 16 + hex_value(s[j++]);
        append_utf8(t.value, v);
        i = j;
      } else {
        static const std::string from = "ntrabfv", to = "\n\t\r\a\b\f\v";
        size_t k = from.find(c);
        t.value.push_back(k == std::string::npos ? c : to[k]);
        i += 2;
      }
      t.value_lines.resize(t.value.size(), line);
    }
  }

  // At a quote: a string or character literal up to its closing quote (or the end of the line).
  void quoted(size_t& i, size_t end, Token& t) const {
    const std::string& s = t_.chars;
    char q = s[i];
    size_t b = ++i;
    while (i < end && s[i] != q && s[i] != '\n') i += s[i] == '\\' && i + 1 < end ? 2 : 1;
    size_t e = std::min(i, end);
    if (i < end && s[i] == q) ++i;
    t.kind = q == '"' ? Tk::string : Tk::chr;
    if (t.kind == Tk::string) decode(b, e, t);
  }

  // At the quote of R"delim( ... )delim"; false when the delimiter is malformed.
  bool raw_string(size_t& i, size_t end, Token& t) const {
    const std::string& s = t_.chars;
    size_t p = i + 1;
    std::string delim;
    while (p < end && s[p] != '(' && delim.size() <= 16) {
      if (s[p] == ' ' || s[p] == ')' || s[p] == '\\' || s[p] == '\n' || s[p] == '\t') return false;
      delim.push_back(s[p++]);
    }
    if (p >= end || s[p] != '(') return false;
    std::string close = ")" + delim + "\"";
    size_t e = s.find(close, p + 1);
    if (e == std::string::npos || e >= end) e = end;
    for (size_t k = p + 1; k < e; ++k) {
      t.value.push_back(s[k]);
      t.value_lines.push_back(line_of(k));
    }
    i = e >= end ? end : e + close.size();
    t.kind = Tk::string;
    return true;
  }

  // One token at i (not space, not a comment); false for a stray character that makes none.
  bool lex_one(size_t& i, size_t end, Token& t) const {
    const std::string& s = t_.chars;
    size_t b = i;
    t.line = line_of(i);
    char c = s[i];
    bool ucn = c == '\\' && i + 1 < end && (s[i + 1] == 'u' || s[i + 1] == 'U');
    if (ident_start(c) || ucn) {
      std::string name;
      while (i < end) {
        if (ident_char(s[i])) {
          name.push_back(s[i++]);
        } else if (s[i] == '\\' && i + 1 < end && (s[i + 1] == 'u' || s[i + 1] == 'U')) {
          size_t n = s[i + 1] == 'u' ? 4 : 8, j = i + 2;
          unsigned long v = 0;
          while (j < end && j < i + 2 + n && hex_digit(s[j])) v = v * 16 + hex_value(s[j++]);
          if (j != i + 2 + n) break;
          append_utf8(name, v);
          i = j;
        } else {
          break;
        }
      }
      if (name.empty()) {  // a lone backslash
        ++i;
        return false;
      }
      if (i < end && s[i] == '"' && (name == "R" || name == "LR" || name == "u8R" || name == "uR" || name == "UR")) {
        if (raw_string(i, end, t)) {
          t.text = s.substr(b, i - b);
          return true;
        }
      }
      if (i < end && (s[i] == '"' || s[i] == '\'') && (name == "L" || name == "u8" || name == "u" || name == "U")) {
        quoted(i, end, t);
        t.text = s.substr(b, i - b);
        return true;
      }
      t.kind = Tk::ident;
      t.text = name;
      return true;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || (c == '.' && i + 1 < end && std::isdigit(static_cast<unsigned char>(s[i + 1])))) {
      ++i;
      while (i < end) {
        char d = s[i];
        if ((d == '+' || d == '-') && std::strchr("eEpP", s[i - 1])) {
          ++i;
        } else if (ident_char(d) || d == '.' || (d == '\'' && i + 1 < end && ident_char(s[i + 1]))) {
          ++i;
        } else {
          break;
        }
      }
      t.kind = Tk::number;
      t.text = s.substr(b, i - b);
      return true;
    }
    if (c == '"' || c == '\'') {
      quoted(i, end, t);
      t.text = s.substr(b, i - b);
      return true;
    }
    for (const auto& [spelling, meaning] : punctuators()) {
      size_t n = std::strlen(spelling);
      if (s.compare(i, n, spelling) != 0 || i + n > end) continue;
      // `<::` is `<` `::` unless followed by `:` or `>` (C++11 [lex.pptoken]).
      if (std::strcmp(spelling, "<:") == 0 && i + 2 < end && s[i + 2] == ':' &&
          !(i + 3 < end && (s[i + 3] == ':' || s[i + 3] == '>')))
        continue;
      t.kind = Tk::punct;
      t.text = meaning;
      i += n;
      return true;
    }
    if (std::isprint(static_cast<unsigned char>(c))) {
      t.kind = Tk::punct;
      t.text = std::string(1, c);
      ++i;
      return true;
    }
    ++i;
    return false;
  }

  // End of the logical line at i: its newline, block comments and literals skipped.
  size_t line_end(size_t i) const {
    const std::string& s = t_.chars;
    while (i < s.size() && s[i] != '\n') {
      if (s[i] == '/' && i + 1 < s.size() && s[i + 1] == '*') {
        size_t e = s.find("*/", i + 2);
        i = e == std::string::npos ? s.size() : e + 2;
      } else if (s[i] == '/' && i + 1 < s.size() && s[i + 1] == '/') {
        while (i < s.size() && s[i] != '\n') ++i;
      } else if (s[i] == '"' || s[i] == '\'') {
        char q = s[i++];
        while (i < s.size() && s[i] != q && s[i] != '\n') i += s[i] == '\\' ? 2 : 1;
        if (i < s.size() && s[i] == q) ++i;
      } else {
        ++i;
      }
    }
    return std::min(i, s.size());
  }

  // The tokens of [i, end), with their space flags.
  std::vector<Token> tokens(size_t i, size_t end) const {
    std::vector<Token> out;
    bool space = false;
    while (i < end) {
      const char c = t_.chars[i];
      if (hspace(c) || c == '\n') {
        space = true;
        ++i;
      } else if (skip_comment(i)) {
        space = true;
      } else {
        Token t;
        if (lex_one(i, end, t)) {
          t.space_before = space;
          out.push_back(std::move(t));
        }
        space = false;
      }
    }
    return out;
  }

  bool skipping() const { return !cond_.empty() && cond_.back().skipping; }

  // After `#`: one directive. Only #define, #undef and conditionals matter here; the include
  // sandbox (env/compile/include_guard.h) judges the rest.
  void directive(size_t& i) {
    const int line = line_of(i > 0 ? i - 1 : 0);
    const size_t end = line_end(i);
    std::vector<Token> toks = tokens(i, end);
    i = end;
    if (toks.empty() || toks[0].kind != Tk::ident) return;
    const std::string name = toks[0].text;
    if (name == "if" || name == "ifdef" || name == "ifndef") {
      // Only `#if 0` is known to be dead; every other group is scanned, whatever its condition.
      bool dead = name == "if" && toks.size() == 2 && toks[1].kind == Tk::number && toks[1].text == "0";
      cond_.push_back({skipping() || dead, skipping()});
    } else if (name == "elif" || name == "else") {
      if (!cond_.empty()) cond_.back().skipping = cond_.back().inherited;
    } else if (name == "endif") {
      if (!cond_.empty()) cond_.pop_back();
    } else if ((name == "define" || name == "undef") && !skipping() && toks.size() >= 2 && toks[1].kind == Tk::ident) {
      Directive d;
      d.undef = name == "undef";
      d.name = toks[1].text;
      d.line = line;
      size_t k = 2;
      if (!d.undef && k < toks.size() && toks[k].is("(") && !toks[k].space_before) {
        d.function_like = true;
        for (++k; k < toks.size() && !toks[k].is(")"); ++k) {
          if (toks[k].kind == Tk::ident) {
            d.params.push_back(toks[k].text);
          } else if (toks[k].is("...")) {  // `...` is __VA_ARGS__; `args...` names it
            d.variadic = true;
            if (toks[k - 1].kind != Tk::ident) d.params.push_back("__VA_ARGS__");
          }
        }
        ++k;
      }
      if (!d.undef)
        for (; k < toks.size(); ++k) d.body.push_back(toks[k]);
      Token marker;
      marker.kind = Tk::directive;
      marker.directive = static_cast<int>(out_.directives.size());
      marker.line = line;
      out_.directives.push_back(std::move(d));
      out_.code.push_back(std::move(marker));
    }
  }

  struct Cond {
    bool skipping;
    bool inherited;  // inside a skipped group: every branch is skipped
  };
  SplicedText t_;
  Lexed out_;
  std::vector<Cond> cond_;
};

// ---------------------------------------------------------------------------------------------
// Macro expansion (the standard algorithm with per-token hide sets), bounded.

constexpr size_t kMaxExpandedTokens = 200000;
constexpr int kMaxExpansionDepth = 200;
constexpr size_t kMaxArgumentSteps = 5000000;  // tokens read while collecting macro arguments

class Expander {
 public:
  explicit Expander(const std::vector<Directive>& directives) : directives_(directives) {}

  std::vector<Token> run(const std::vector<Token>& code) {
    std::deque<Token> in(code.begin(), code.end());
    return expand(in, 0);
  }

  bool overflowed() const { return overflow_; }
  int overflow_line() const { return overflow_line_; }

 private:
  int id_of(const std::string& name) {
    auto it = ids_.find(name);
    if (it != ids_.end()) return it->second;
    int id = static_cast<int>(ids_.size());
    ids_[name] = id;
    return id;
  }

  static bool hidden(const Token& t, int id) { return std::binary_search(t.hide.begin(), t.hide.end(), id); }

  void apply(const Token& t) {
    const Directive& d = directives_[t.directive];
    if (d.undef) {
      macros_.erase(d.name);
    } else {
      macros_[d.name] = &d;
    }
  }

  void overflow(int line) {
    if (!overflow_) overflow_line_ = line;
    overflow_ = true;
  }

  std::vector<Token> expand(std::deque<Token>& in, int depth) {
    std::vector<Token> out;
    if (depth > kMaxExpansionDepth) overflow(in.empty() ? 0 : in.front().line);
    while (!in.empty()) {
      if (overflow_) {  // the source is refused; what is left is not worth copying
        in.clear();
        break;
      }
      Token t = std::move(in.front());
      in.pop_front();
      if (t.kind == Tk::directive) {
        apply(t);
        continue;
      }
      auto m = t.kind == Tk::ident ? macros_.find(t.text) : macros_.end();
      if (m == macros_.end() || hidden(t, id_of(t.text))) {
        out.push_back(std::move(t));
        continue;
      }
      const Directive& mac = *m->second;
      const int id = id_of(mac.name);
      if (!mac.function_like) {
        std::vector<int> hs = t.hide;
        add_hide(hs, id);
        push_front(in, substitute(mac, {}, hs, t, depth));
        continue;
      }
      // A function-like macro's name not followed by `(` is an ordinary identifier.
      size_t k = 0;
      while (k < in.size() && in[k].kind == Tk::directive) ++k;
      if (k >= in.size() || !in[k].is("(")) {
        out.push_back(std::move(t));
        continue;
      }
      std::vector<std::vector<Token>> args;
      std::deque<Token> taken;
      Token rparen;
      if (!collect_args(in, args, taken, rparen)) {  // unterminated: the rest stays as it is
        out.push_back(std::move(t));
        continue;
      }
      size_t want = mac.params.size();
      if (want == 0 && args.size() == 1 && args[0].empty()) args.clear();
      if (mac.variadic && args.size() > want && want > 0) {  // the extra arguments are __VA_ARGS__
        std::vector<Token>& last = args[want - 1];
        for (size_t a = want; a < args.size(); ++a) {
          Token comma;
          comma.kind = Tk::punct;
          comma.text = ",";
          comma.line = rparen.line;
          last.push_back(comma);
          last.insert(last.end(), args[a].begin(), args[a].end());
        }
        args.resize(want);
      }
      if (mac.variadic && args.size() + 1 == want) args.emplace_back();
      if (args.size() != want) {  // the compiler refuses this; scan the tokens as written
        out.push_back(std::move(t));
        in.insert(in.begin(), std::make_move_iterator(taken.begin()), std::make_move_iterator(taken.end()));
        continue;
      }
      std::vector<int> hs;
      std::set_intersection(t.hide.begin(), t.hide.end(), rparen.hide.begin(), rparen.hide.end(), std::back_inserter(hs));
      add_hide(hs, id);
      push_front(in, substitute(mac, args, hs, t, depth));
    }
    return out;
  }

  static void add_hide(std::vector<int>& hs, int id) {
    auto it = std::lower_bound(hs.begin(), hs.end(), id);
    if (it == hs.end() || *it != id) hs.insert(it, id);
  }

  void push_front(std::deque<Token>& in, std::vector<Token> toks) {
    produced_ += toks.size();
    if (produced_ > kMaxExpandedTokens) overflow(toks.empty() ? 0 : toks.front().line);
    in.insert(in.begin(), std::make_move_iterator(toks.begin()), std::make_move_iterator(toks.end()));
  }

  // At `(` (after directives, which are applied): the arguments up to the matching `)`.
  // `taken` gets the tokens read (directives aside); on failure they are back in `in`.
  bool collect_args(std::deque<Token>& in, std::vector<std::vector<Token>>& args, std::deque<Token>& taken,
                    Token& rparen) {
    int depth = 0;
    args.emplace_back();
    while (!in.empty()) {
      if (++steps_ > kMaxArgumentSteps) {  // many unterminated calls: quadratic rescanning
        overflow(in.front().line);
        break;
      }
      Token t = std::move(in.front());
      in.pop_front();
      if (t.kind == Tk::directive) {
        apply(t);
        continue;
      }
      taken.push_back(t);
      if (t.is("(")) {
        if (depth++ == 0) continue;
      } else if (t.is(")")) {
        if (--depth == 0) {
          rparen = t;
          return true;
        }
      } else if (t.is(",") && depth == 1) {
        args.emplace_back();
        continue;
      }
      args.back().push_back(std::move(t));
    }
    in.insert(in.begin(), taken.begin(), taken.end());
    return false;
  }

  static int param_index(const Directive& m, const Token& t) {
    if (!m.function_like || t.kind != Tk::ident) return -1;
    for (size_t p = 0; p < m.params.size(); ++p)
      if (m.params[p] == t.text) return static_cast<int>(p);
    return -1;
  }

  // Marks a token made by the expansion of `mac` invoked at `at`.
  static void made_by(Token& t, const Directive& mac, const Token& at) {
    t.line = at.line;
    std::fill(t.value_lines.begin(), t.value_lines.end(), at.line);
    t.via_macro = at.via_macro.empty() ? mac.name : at.via_macro;
    t.via_line = at.via_macro.empty() ? mac.line : at.via_line;
  }

  static Token stringify(const std::vector<Token>& arg) {
    Token t;
    t.kind = Tk::string;
    for (size_t k = 0; k < arg.size(); ++k) {
      if (k > 0 && arg[k].space_before) t.value.push_back(' ');
      t.value += arg[k].text;
    }
    t.text = "\"" + t.value + "\"";
    t.value_lines.assign(t.value.size(), 0);
    return t;
  }

  std::vector<Token> substitute(const Directive& mac, const std::vector<std::vector<Token>>& args,
                                const std::vector<int>& hs, const Token& at, int depth) {
    std::vector<Token> r;
    std::map<int, std::vector<Token>> expanded_args;
    const std::vector<Token>& body = mac.body;
    for (size_t i = 0; i < body.size(); ++i) {
      const Token& b = body[i];
      if (mac.function_like && b.is("#") && i + 1 < body.size() && param_index(mac, body[i + 1]) >= 0) {
        Token s = stringify(args[param_index(mac, body[++i])]);
        made_by(s, mac, at);
        r.push_back(std::move(s));
        continue;
      }
      if (b.is("##") && !r.empty() && i + 1 < body.size()) {
        const Token& nb = body[++i];
        int q = param_index(mac, nb);
        std::vector<Token> rhs = q >= 0 ? args[q] : std::vector<Token>{nb};
        if (q < 0) made_by(rhs[0], mac, at);
        if (rhs.empty()) continue;
        Token lhs = std::move(r.back());
        r.pop_back();
        if (lhs.kind == Tk::placemarker) {
          r.insert(r.end(), rhs.begin(), rhs.end());
          continue;
        }
        std::vector<Token> pasted = Lexer::lex_text(lhs.text + rhs[0].text, at.line);
        for (Token& p : pasted) made_by(p, mac, at);
        r.insert(r.end(), pasted.begin(), pasted.end());
        r.insert(r.end(), rhs.begin() + 1, rhs.end());
        continue;
      }
      int p = param_index(mac, b);
      if (p >= 0) {
        bool pasted_next = i + 1 < body.size() && body[i + 1].is("##");
        if (pasted_next) {
          if (args[p].empty()) {
            Token pm;
            pm.kind = Tk::placemarker;
            r.push_back(pm);
          } else {
            r.insert(r.end(), args[p].begin(), args[p].end());
          }
        } else {
          auto it = expanded_args.find(p);
          if (it == expanded_args.end()) {
            std::deque<Token> in(args[p].begin(), args[p].end());
            it = expanded_args.emplace(p, expand(in, depth + 1)).first;
          }
          r.insert(r.end(), it->second.begin(), it->second.end());
        }
        continue;
      }
      Token copy = b;
      made_by(copy, mac, at);
      r.push_back(std::move(copy));
    }
    r.erase(std::remove_if(r.begin(), r.end(), [](const Token& t) { return t.kind == Tk::placemarker; }), r.end());
    for (Token& t : r)
      for (int id : hs) add_hide(t.hide, id);
    if (!r.empty()) r.front().space_before = at.space_before;
    return r;
  }

  const std::vector<Directive>& directives_;
  std::map<std::string, const Directive*> macros_;
  std::map<std::string, int> ids_;
  size_t produced_ = 0;
  size_t steps_ = 0;
  bool overflow_ = false;
  int overflow_line_ = 0;
};

// Translation phase 6: adjacent string literals become one.
std::vector<Token> concatenate_strings(std::vector<Token> toks) {
  std::vector<Token> out;
  for (Token& t : toks) {
    if (t.kind == Tk::string && !out.empty() && out.back().kind == Tk::string) {
      Token& prev = out.back();
      prev.value += t.value;
      prev.value_lines.insert(prev.value_lines.end(), t.value_lines.begin(), t.value_lines.end());
      if (prev.via_macro.empty()) {
        prev.via_macro = t.via_macro;
        prev.via_line = t.via_line;
      }
      continue;
    }
    out.push_back(std::move(t));
  }
  return out;
}

// `__device__` and friends are, underneath, `__location__(device)` / `__attribute__((device))`;
// those spellings become the keyword they stand for.
std::vector<Token> normalise_memory_spaces(const std::vector<Token>& toks) {
  static const std::map<std::string, std::string> spaces = {
      {"device", "__device__"},     {"__device__", "__device__"},     {"managed", "__managed__"},
      {"__managed__", "__managed__"}, {"constant", "__constant__"},   {"__constant__", "__constant__"},
      {"shared", "__shared__"},     {"__shared__", "__shared__"}};
  std::vector<Token> out;
  for (size_t i = 0; i < toks.size(); ++i) {
    const Token& t = toks[i];
    bool loc = t.is("__location__"), attr = t.is("__attribute__") || t.is("__attribute");
    if ((loc || attr) && i + 1 < toks.size() && toks[i + 1].is("(")) {
      size_t j = i + 1;
      int depth = 0;
      std::vector<Token> found;
      for (; j < toks.size(); ++j) {
        if (toks[j].is("(")) ++depth;
        if (toks[j].is(")") && --depth == 0) break;
        auto s = toks[j].kind == Tk::ident ? spaces.find(toks[j].text) : spaces.end();
        if (s != spaces.end()) {
          Token k = toks[j];
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

using Stmt = std::vector<const Token*>;

const Token& braces_marker() {
  static const Token t = [] {
    Token m;
    m.kind = Tk::punct;
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
    Lexed lexed = Lexer(source).run();
    for (const Directive& d : lexed.directives)
      if (!d.undef) scan_macro_body(d);
    Expander expander(lexed.directives);
    std::vector<Token> toks = expander.run(lexed.code);
    if (expander.overflowed()) {
      std::ostringstream os;
      os << "macros expand beyond what can be checked (more than " << kMaxExpandedTokens
         << " tokens, nesting deeper than " << kMaxExpansionDepth
         << ", or unterminated macro calls): simplify the macros";
      add("macro_expansion", expander.overflow_line(), os.str());
    }
    toks_ = normalise_memory_spaces(concatenate_strings(std::move(toks)));
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
  static std::string where(const Token& t, const std::string& in_macro) {
    if (!in_macro.empty()) return " in the macro '" + in_macro + "'";
    if (t.via_macro.empty()) return "";
    return " (through the macro '" + t.via_macro + "' defined on line " + std::to_string(t.via_line) + ")";
  }

  // Names: timers, printf, heap allocation, configured names.
  void scan_identifiers(const std::vector<Token>& toks, const std::string& in_macro) {
    for (size_t i = 0; i < toks.size(); ++i) {
      const Token& t = toks[i];
      if (t.kind != Tk::ident) continue;
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
  static bool placement_new(const std::vector<Token>& toks, size_t i) {
    if (i + 1 >= toks.size() || !toks[i + 1].is("(")) return false;
    int depth = 0;
    size_t k = i + 1;
    for (; k < toks.size(); ++k) {
      if (toks[k].is("(")) ++depth;
      if (toks[k].is(")") && --depth == 0) break;
    }
    return k + 1 < toks.size() && (toks[k + 1].kind == Tk::ident || toks[k + 1].is("::"));
  }

  static bool is_asm(const Token& t) { return t.is("asm") || t.is("__asm__") || t.is("__asm"); }

  // A #define body, used or not: its names, and PTX register names in its string literals.
  void scan_macro_body(const Directive& d) {
    std::vector<Token> body = concatenate_strings(d.body);
    scan_identifiers(body, d.name);
    if (!config_.forbid_timers) return;
    for (const Token& t : body)
      if (t.kind == Tk::string) scan_ptx(t, d.name, /*registers_need_percent=*/true);
  }

  // PTX text (an asm template, or a string that may become one).
  void scan_ptx(const Token& t, const std::string& in_macro, bool registers_need_percent) {
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
      while (k < toks_.size() && toks_[k].kind == Tk::ident &&
             (toks_[k].is("volatile") || toks_[k].is("__volatile__") || toks_[k].is("goto") || toks_[k].is("inline")))
        ++k;
      if (k >= toks_.size() || !toks_[k].is("(")) continue;
      int depth = 0;
      for (; k < toks_.size(); ++k) {
        if (toks_[k].is("(")) ++depth;
        if (toks_[k].is(")") && --depth == 0) break;
        if (toks_[k].kind == Tk::string) strings.push_back(k);
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
      const Token& t = toks_[i];
      if ((t.is("struct") || t.is("class") || t.is("union") || t.is("enum") || t.is("typename")) &&
          toks_[i + 1].kind == Tk::ident)
        types_.insert(toks_[i + 1].text);
      if (t.is("using") && i + 2 < toks_.size() && toks_[i + 1].kind == Tk::ident && toks_[i + 2].is("="))
        types_.insert(toks_[i + 1].text);
      if (t.is("typedef"))
        for (size_t k = i + 1; k < toks_.size() && !toks_[k].is(";"); ++k)
          if (toks_[k].kind == Tk::ident && k + 1 < toks_.size() && toks_[k + 1].is(";")) types_.insert(toks_[k].text);
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
      const Token& t = *s[b];
      return t.is("...") || (t.kind == Tk::ident && (is_keyword(t.text) || types_.count(t.text)));
    }
    if (s[b]->kind != Tk::ident && !s[b]->is("::")) return false;
    int nest = 0;  // [] and <> may hold numbers
    for (size_t k = b; k < e; ++k) {
      const Token& t = *s[k];
      if (t.is("[") || t.is("<")) ++nest;
      if (t.is("]") || t.is(">")) --nest;
      if (t.kind == Tk::ident) continue;
      if (t.kind == Tk::number && nest > 0) continue;
      static const std::set<std::string> ok = {"*", "&", "&&", "::", "<", ">", ",", "[", "]", "(", ")", "...", ">>"};
      if (t.kind == Tk::punct && ok.count(t.text)) continue;
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
      const Token& t = *stmt[k];
      if (t.is("template") && k + 1 < stmt.size() && stmt[k + 1]->is("<")) {  // template <...>
        int depth = 0;
        for (++k; k < stmt.size(); ++k) {
          if (stmt[k]->is("<")) ++depth;
          if (stmt[k]->is(">") && --depth == 0) break;
          if (stmt[k]->is(">>") && (depth -= 2) <= 0) break;
        }
        continue;
      }
      if (t.kind == Tk::ident && is_attribute(t.text) && k + 1 < stmt.size() && stmt[k + 1]->is("(")) {
        k = matching(stmt, k + 1);
        continue;
      }
      if (t.is("[") && k + 1 < stmt.size() && stmt[k + 1]->is("[")) {  // [[attribute]]
        k = matching(stmt, k);
        continue;
      }
      if (t.kind == Tk::string || t.is("extern")) continue;  // extern "C"
      d.push_back(&t);
    }
    // A function declarator: the first `(` after a name, holding parameters; `operator...(`.
    for (size_t k = 0; k < d.size(); ++k) {
      if (d[k]->is("=") || d[k] == &braces_marker()) break;
      if (d[k]->is("operator")) return {};
      if (!d[k]->is("(")) continue;
      if (k > 0 && d[k - 1]->kind == Tk::ident && !is_keyword(d[k - 1]->text) && parameter_list(d, k, matching(d, k)))
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
      const Token& t = *d[k];
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
          (t.is("(") && name_is_declarator && k > b && d[k - 1]->kind == Tk::ident && d[k - 1]->text == v.name)) {
        stop = k;
        break;
      }
      if (t.is("[")) {
        k = matching(d, k);
        continue;
      }
      if (t.kind == Tk::ident && type_keywords.count(t.text)) typed = true;
      if (t.kind == Tk::ident && !is_keyword(t.text)) {
        bool qualified = k > b && d[k - 1]->is("::");
        name_is_declarator = typed && !qualified && !class_head;
        typed = true;
        v.name = t.text;
        v.line = t.line;
      }
    }
    bool constexpr_ = false, const_before = false, const_after = false;
    const Token* last_indirection = nullptr;
    for (size_t k = b; k < stop; ++k) {
      const Token& t = *d[k];
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
    return std::any_of(s.begin(), s.end(), [&](const Token* t) { return t->is(word); });
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
    for (const Token* t : s) {
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
      const Token* at = s.front();
      for (const Token* t : s)
        if (t->kind == Tk::ident && t->text == v.name) {
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
      const Token& t = *s[e - 1];
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
    if (s.size() == 2 && s[0]->is("extern") && s[1]->kind == Tk::string) return Scope::ns;
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
      const Token& t = toks_[i];
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
          continues = toks_[i + 1].kind == Tk::punct && after_lambda.count(toks_[i + 1].text);
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
      const Token& t = toks_[i];
      if (t.kind != Tk::ident || !(t.text.rfind("atomic", 0) == 0 || t.text.rfind("__atomic", 0) == 0)) continue;
      if (!toks_[i + 1].is("(")) continue;
      int depth = 0;
      for (size_t k = i + 1; k < toks_.size(); ++k) {
        if (toks_[k].is("(")) ++depth;
        if (toks_[k].is(")") && --depth == 0) break;
        if (depth == 1 && toks_[k].is(",")) break;  // the first argument: the address
        if (toks_[k].kind == Tk::ident && state_names_.count(toks_[k].text)) {
          add("global_state", t.line,
              "changes the persistent variable '" + toks_[k].text + "' ('" + t.text + "')" + where(t, "") + ": " + kStateRule);
          break;
        }
      }
    }
  }

  const StaticCheckConfig& config_;
  std::vector<std::string> lines_;
  std::vector<Token> toks_;
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
