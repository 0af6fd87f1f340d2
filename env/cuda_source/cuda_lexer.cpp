#include "env/cuda_source/cuda_lexer.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <utility>

namespace kforge {

bool CudaToken::is(const char* spelling) const {
  return (kind == TokenKind::punctuator || kind == TokenKind::identifier) && text == spelling;
}

namespace {

bool ident_start(char c) {
  unsigned char u = static_cast<unsigned char>(c);
  return std::isalpha(u) || c == '_' || c == '$' || u >= 0x80;
}
bool ident_char(char c) {
  unsigned char u = static_cast<unsigned char>(c);
  return std::isalnum(u) || c == '_' || c == '$' || u >= 0x80;
}
bool hspace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }
bool digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }
bool hex_digit(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }
unsigned long hex_value(char c) { return digit(c) ? c - '0' : std::tolower(static_cast<unsigned char>(c)) - 'a' + 10; }

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

// Punctuators of more than one character, longest first; digraphs map to what they stand for.
const std::vector<std::pair<const char*, const char*>>& punctuators() {
  static const std::vector<std::pair<const char*, const char*>> p = {
      {"%:%:", "##"}, {"...", "..."}, {"<<=", "<<="}, {">>=", ">>="}, {"->*", "->*"}, {"<=>", "<=>"}, {"##", "##"},
      {"%:", "#"},    {"<%", "{"},    {"%>", "}"},    {"<:", "["},    {":>", "]"},    {"::", "::"},   {"->", "->"},
      {"<<", "<<"},   {">>", ">>"},   {"<=", "<="},   {">=", ">="},   {"==", "=="},   {"!=", "!="},   {"&&", "&&"},
      {"||", "||"},   {"++", "++"},   {"--", "--"},   {"+=", "+="},   {"-=", "-="},   {"*=", "*="},   {"/=", "/="},
      {"%=", "%="},   {"&=", "&="},   {"|=", "|="},   {"^=", "^="},   {".*", ".*"},
  };
  return p;
}

// At chars[i] == '/': skips a comment (`//` up to, not including, its newline; `/* */`) and
// returns true; otherwise leaves i and returns false.
bool skip_comment(const std::string& s, size_t& i) {
  if (i >= s.size() || s[i] != '/' || i + 1 >= s.size()) return false;
  if (s[i + 1] == '/') {
    while (i < s.size() && s[i] != '\n') ++i;
    return true;
  }
  if (s[i + 1] == '*') {
    size_t end = s.find("*/", i + 2);
    i = end == std::string::npos ? s.size() : end + 2;
    return true;
  }
  return false;
}

bool raw_prefix(const std::string& name) { return name == "R" || name == "LR" || name == "u8R" || name == "uR" || name == "UR"; }
bool encoding_prefix(const std::string& name) { return name == "L" || name == "u8" || name == "u" || name == "U"; }

class Lexer {
 public:
  explicit Lexer(const SplicedText& text) : t_(text) {}

  LexedSource run() {
    const std::string& s = t_.chars;
    out_.tokens.reserve(s.size() / 4);
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
      } else if (comment(i)) {
        space = true;  // a comment is one space; it does not start a line
      } else {
        CudaToken t = next(i, s.size(), false);
        t.space_before = space;
        t.line_start = line_start;
        const bool hash = line_start && t.is("#");
        t.directive = hash;
        out_.tokens.push_back(std::move(t));
        if (hash) directive(i);
        line_start = hash;
        space = false;
      }
    }
    return std::move(out_);
  }

  // Tokens separated by white space only.
  std::vector<CudaToken> fragment() {
    std::vector<CudaToken> out;
    bool space = false;
    for (size_t i = 0; i < t_.chars.size();) {
      if (hspace(t_.chars[i]) || t_.chars[i] == '\n') {
        space = true;
        ++i;
        continue;
      }
      CudaToken t = next(i, t_.chars.size(), false);
      t.space_before = space;
      t.line = 0;
      std::fill(t.value_lines.begin(), t.value_lines.end(), 0);
      out.push_back(std::move(t));
      space = false;
    }
    return out;
  }

 private:
  int line_of(size_t i) const {
    if (t_.lines.empty()) return 1;
    return t_.lines[std::min(i, t_.lines.size() - 1)];
  }

  bool comment(size_t& i) {
    const size_t b = i;
    if (!skip_comment(t_.chars, i)) return false;
    const bool closed = t_.chars[b + 1] == '/' || (i >= b + 4 && t_.chars.compare(i - 2, 2, "*/") == 0);
    if (!closed && out_.unterminated_comment_line == 0) out_.unterminated_comment_line = line_of(b);
    return true;
  }

  // After the `#` that starts a directive: its tokens, up to the newline that ends its line
  // (block comments, which may hold newlines, are spaces within it).
  void directive(size_t& i) {
    const std::string& s = t_.chars;
    bool space = false;
    while (i < s.size() && s[i] != '\n') {
      if (hspace(s[i])) {
        space = true;
        ++i;
      } else if (comment(i)) {
        space = true;
      } else {
        size_t eol = s.find('\n', i);
        CudaToken t = next(i, eol == std::string::npos ? s.size() : eol, true);
        t.space_before = space;
        t.directive = true;
        out_.tokens.push_back(std::move(t));
        space = false;
      }
    }
  }

  // Decodes the escapes of a (non-raw) literal's content [b, e) into value / value_lines.
  void decode(size_t b, size_t e, CudaToken& t) const {
    const std::string& s = t_.chars;
    for (size_t i = b; i < e;) {
      int line = line_of(i);
      if (s[i] != '\\' || i + 1 >= e) {
        t.value.push_back(s[i++]);
        t.value_lines.push_back(line);
        continue;
      }
      char c = s[i + 1];
      unsigned long v = 0;
      size_t j = i + 2;
      if (c == 'x') {
        while (j < e && hex_digit(s[j])) v = v * 16 + hex_value(s[j++]);
        t.value.push_back(static_cast<char>(v & 0xFF));
      } else if (c >= '0' && c <= '7') {
        for (j = i + 1; j < e && j < i + 4 && s[j] >= '0' && s[j] <= '7';) v = v * 8 + (s[j++] - '0');
        t.value.push_back(static_cast<char>(v & 0xFF));
      } else if ((c == 'u' || c == 'U') && i + 2 < e) {
        size_t n = c == 'u' ? 4 : 8;
        while (j < e && j < i + 2 + n && hex_digit(s[j])) v = v * 16 + hex_value(s[j++]);
        append_utf8(t.value, v);
      } else {
        static const std::string from = "ntrabfv", to = "\n\t\r\a\b\f\v";
        size_t k = from.find(c);
        t.value.push_back(k == std::string::npos ? c : to[k]);
      }
      i = j;
      t.value_lines.resize(t.value.size(), line);
    }
  }

  // At a quote: a string or character literal up to its closing quote (or the end of the line).
  void quoted(size_t& i, size_t end, CudaToken& t) const {
    const std::string& s = t_.chars;
    char q = s[i];
    size_t b = ++i;
    while (i < end && s[i] != q && s[i] != '\n') i += s[i] == '\\' && i + 1 < end ? 2 : 1;
    size_t e = std::min(i, end);
    if (i < end && s[i] == q) {
      ++i;
    } else {
      t.unterminated = true;
    }
    t.kind = q == '"' ? TokenKind::string : TokenKind::character;
    decode(b, e, t);
  }

  // At the quote of R"delim( ... )delim"; false when the delimiter is malformed.
  bool raw_string(size_t& i, size_t end, CudaToken& t) const {
    const std::string& s = t_.chars;
    size_t p = i + 1;
    std::string delim;
    while (p < end && s[p] != '(' && delim.size() < 16) {
      if (s[p] == ' ' || s[p] == ')' || s[p] == '\\' || s[p] == '\n' || s[p] == '\t') return false;
      delim.push_back(s[p++]);
    }
    if (p >= end || s[p] != '(') return false;
    std::string close = ")" + delim + "\"";
    size_t e = s.find(close, p + 1);
    if (e == std::string::npos || e >= end) {
      e = end;
      t.unterminated = true;
    }
    for (size_t k = p + 1; k < e; ++k) {
      t.value.push_back(s[k]);
      t.value_lines.push_back(line_of(k));
    }
    i = e >= end ? end : e + close.size();
    t.kind = TokenKind::string;
    return true;
  }

  // An identifier at i (universal character names decoded); "" for a backslash that starts none.
  std::string identifier(size_t& i, size_t end) const {
    const std::string& s = t_.chars;
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
    return name;
  }

  // At `<` where a header name may stand (see wants_header_name): <name> on this line.
  bool header_name(size_t& i, size_t end, CudaToken& t) const {
    const std::string& s = t_.chars;
    size_t e = i + 1;
    while (e < end && s[e] != '>' && s[e] != '\n') ++e;
    if (e >= end || s[e] != '>') return false;
    t.kind = TokenKind::header_name;
    t.value = s.substr(i + 1, e - i - 1);
    for (size_t k = i + 1; k < e; ++k) t.value_lines.push_back(line_of(k));
    i = e + 1;
    return true;
  }

  // After `#include` (and its kin) in a directive, and after `__has_include(` anywhere.
  bool wants_header_name(bool in_directive) const {
    const std::vector<CudaToken>& o = out_.tokens;
    const size_t n = o.size();
    if (n < 2) return false;
    const CudaToken& a = o[n - 2];
    const CudaToken& b = o[n - 1];
    if (in_directive && a.line_start && a.is("#") && b.kind == TokenKind::identifier)
      return b.text == "include" || b.text == "include_next" || b.text == "import" || b.text == "embed";
    return b.is("(") && (a.is("__has_include") || a.is("__has_include_next"));
  }

  // The token at i (not space, not a comment), ending at or before `end`.
  CudaToken next(size_t& i, size_t end, bool in_directive) const {
    CudaToken t;
    t.begin = i;
    t.line = line_of(i);
    lex_one(i, end, in_directive, t);
    t.end = i;
    if (t.kind != TokenKind::identifier && t.kind != TokenKind::punctuator) t.text = t_.chars.substr(t.begin, i - t.begin);
    return t;
  }

  void lex_one(size_t& i, size_t end, bool in_directive, CudaToken& t) const {
    const std::string& s = t_.chars;
    const char c = s[i];
    const bool ucn = c == '\\' && i + 1 < end && (s[i + 1] == 'u' || s[i + 1] == 'U');
    if (ident_start(c) || ucn) {
      std::string name = identifier(i, end);
      if (name.empty()) {  // a backslash that starts no universal character name
        t.kind = TokenKind::other;
        ++i;
        return;
      }
      if (i < end && s[i] == '"' && raw_prefix(name) && raw_string(i, end, t)) return;
      if (i < end && (s[i] == '"' || s[i] == '\'') && encoding_prefix(name)) return quoted(i, end, t);
      t.kind = TokenKind::identifier;
      t.text = std::move(name);
      return;
    }
    if (digit(c) || (c == '.' && i + 1 < end && digit(s[i + 1]))) {
      for (++i; i < end; ++i) {
        const char d = s[i];
        const bool sign = (d == '+' || d == '-') && std::strchr("eEpP", s[i - 1]);
        if (!(sign || ident_char(d) || d == '.' || (d == '\'' && i + 1 < end && ident_char(s[i + 1])))) break;
      }
      t.kind = TokenKind::number;
      return;
    }
    if (c == '"' || c == '\'') return quoted(i, end, t);
    if (c == '<' && wants_header_name(in_directive) && header_name(i, end, t)) return;
    for (const auto& [spelling, meaning] : punctuators()) {
      if (spelling[0] != c) continue;
      size_t n = std::strlen(spelling);
      if (i + n > end || s.compare(i, n, spelling) != 0) continue;
      // `<::` is `<` `::` unless followed by `:` or `>` (C++11 [lex.pptoken]).
      if (std::strcmp(spelling, "<:") == 0 && i + 2 < end && s[i + 2] == ':' && !(i + 3 < end && (s[i + 3] == ':' || s[i + 3] == '>')))
        continue;
      t.kind = TokenKind::punctuator;
      t.text = meaning;
      i += n;
      return;
    }
    t.kind = std::isprint(static_cast<unsigned char>(c)) ? TokenKind::punctuator : TokenKind::other;
    t.text = std::string(1, c);
    ++i;
  }

  const SplicedText& t_;
  LexedSource out_;
};

}  // namespace

LexedSource lex_cuda(const SplicedText& text) { return Lexer(text).run(); }

LexedSource lex_cuda(const std::string& source) { return lex_cuda(splice_lines(source)); }

std::vector<CudaToken> lex_cuda_fragment(const std::string& text) {
  SplicedText spliced = splice_lines(text);
  return Lexer(spliced).fragment();
}

}  // namespace kforge
