#include "env/compile/include_guard.h"

#include <cctype>
#include <sstream>

#include "anticheat/source_text.h"

namespace kforge {
namespace {

bool is_ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '$'; }
bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$'; }
bool is_hspace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// Names whose definition by a candidate could steer what the toolkit headers include.
bool reserved_macro(const std::string& name) {
  return starts_with(name, "_") || starts_with(name, "THRUST_") || starts_with(name, "CUB_") ||
         starts_with(name, "CCCL_") || starts_with(name, "LIBCUDACXX_");
}

// A pragma (its text after `pragma`) that names or creates files.
bool file_pragma(const std::string& text, std::string* word) {
  size_t i = 0;
  while (i < text.size()) {
    char c = text[i];
    if (c == '"' || c == '\'') {  // skip literals: only identifiers count
      char q = c;
      for (++i; i < text.size() && text[i] != q; ++i)
        if (text[i] == '\\') ++i;
      ++i;
      continue;
    }
    if (is_ident_start(c)) {
      size_t b = i;
      while (i < text.size() && is_ident_char(text[i])) ++i;
      std::string w = text.substr(b, i - b);
      std::string lower;
      for (char ch : w) lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(ch))));
      if (lower.find("include") != std::string::npos || lower.find("pch") != std::string::npos ||
          lower == "dependency" || lower == "hdrstop" || lower == "embed" || lower == "import") {
        *word = w;
        return true;
      }
      continue;
    }
    ++i;
  }
  return false;
}

class Scanner {
 public:
  Scanner(const SplicedText& text, const std::string& file, SourceScan& out) : t_(text), file_(file), out_(out) {}

  void run() {
    bool line_start = true;
    size_t i = 0;
    const std::string& s = t_.chars;
    while (i < s.size()) {
      char c = s[i];
      if (c == '\n') {
        line_start = true;
        ++i;
        continue;
      }
      if (is_hspace(c)) {
        ++i;
        continue;
      }
      if (skip_comment(i)) continue;  // a comment is one space: it does not end a line
      if (line_start && (c == '#' || (c == '%' && i + 1 < s.size() && s[i + 1] == ':'))) {
        i += c == '#' ? 1 : 2;
        directive(i);
        line_start = true;
        continue;
      }
      line_start = false;
      mark_other(line_of(i));
      code_token(i, s.size());
    }
  }

 private:
  int line_of(size_t i) const {
    if (t_.lines.empty()) return 1;
    return t_.lines[i < t_.lines.size() ? i : t_.lines.size() - 1];
  }

  void error(int line, const std::string& message) {
    std::ostringstream os;
    os << file_ << ":" << line << ": " << message;
    out_.errors.push_back(os.str());
  }

  void mark_other(int line) {
    if (out_.first_non_include_line == 0) out_.first_non_include_line = line;
  }

  bool skip_comment(size_t& i) const { return kforge::skip_comment(t_.chars, i); }

  // Skips horizontal space and comments within one logical line.
  void skip_space(size_t& i, size_t end) const {
    while (i < end) {
      if (is_hspace(t_.chars[i])) {
        ++i;
      } else if (!skip_comment(i)) {
        return;
      }
    }
  }

  // At a quote: skips a string or character literal (to its closing quote, or to the newline
  // that leaves it unterminated).
  void skip_literal(size_t& i, size_t end) const {
    const std::string& s = t_.chars;
    char q = s[i++];
    while (i < end && s[i] != q && s[i] != '\n') {
      if (s[i] == '\\' && i + 1 < end) ++i;
      ++i;
    }
    if (i < end && s[i] == q) ++i;
  }

  // At the quote of R"delim( ... )delim".
  bool skip_raw_string(size_t& i, size_t end) const {
    const std::string& s = t_.chars;
    size_t p = i + 1;
    std::string delim;
    while (p < end && s[p] != '(' && delim.size() <= 16) {
      char c = s[p];
      if (c == ' ' || c == ')' || c == '\\' || c == '\n' || c == '\t') return false;
      delim.push_back(c);
      ++p;
    }
    if (p >= end || s[p] != '(') return false;
    std::string close = ")" + delim + "\"";
    size_t e = s.find(close, p + 1);
    i = e == std::string::npos || e >= end ? end : e + close.size();
    return true;
  }

  // The string literal's content at i (after optional space and an encoding prefix), or false.
  bool read_string_literal(size_t& i, size_t end, std::string* content) const {
    const std::string& s = t_.chars;
    while (i < end && is_ident_char(s[i]) && s[i] != '"') ++i;  // L, u8, u, U prefixes
    if (i >= end || s[i] != '"') return false;
    size_t b = i + 1;
    skip_literal(i, end);
    size_t e = i > b && s[i - 1] == '"' ? i - 1 : i;
    *content = s.substr(b, e - b);
    return true;
  }

  // Checks a header name used by #include or __has_include; `what` names the construct.
  void check_header_name(int line, const std::string& name, const std::string& what) {
    if (name.empty()) {
      error(line, what + " <>: an empty header name");
      return;
    }
    std::string shown = what + " <" + name + ">";
    if (name[0] == '/' || name[0] == '\\' || (name.size() > 1 && name[1] == ':')) {
      error(line, shown + ": absolute paths are not allowed; include toolkit headers by their relative name");
      return;
    }
    if (name.find('\\') != std::string::npos) {
      error(line, shown + ": backslashes are not allowed in header names");
      return;
    }
    std::string component;
    std::istringstream parts(name);
    while (std::getline(parts, component, '/')) {
      if (component == "..") {
        error(line, shown + ": '..' path components are not allowed");
        return;
      }
    }
    for (char c : name) {
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '/' || c == '-' || c == '+')) {
        error(line, shown + ": unusual character '" + std::string(1, c) + "' in a header name");
        return;
      }
    }
  }

  // At `<` or elsewhere after `#include` / `__has_include(`: returns what kind of name follows.
  // For `<name>`, *name is set and i moves past `>`.
  enum class NameKind { angle, quoted, computed, unterminated };
  NameKind header_name(size_t& i, size_t end, std::string* name) const {
    const std::string& s = t_.chars;
    if (i < end && s[i] == '<') {
      size_t e = i + 1;
      while (e < end && s[e] != '>' && s[e] != '\n') ++e;
      if (e >= end || s[e] != '>') return NameKind::unterminated;
      *name = s.substr(i + 1, e - i - 1);
      i = e + 1;
      return NameKind::angle;
    }
    if (i < end && s[i] == '"') return NameKind::quoted;
    return NameKind::computed;
  }

  // Identifiers, numbers, literals and punctuation of code (or of a directive's tail) at i.
  void code_token(size_t& i, size_t end) {
    const std::string& s = t_.chars;
    char c = s[i];
    if (c == '"') {
      skip_literal(i, end);
      return;
    }
    if (c == '\'') {
      skip_literal(i, end);
      return;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || (c == '.' && i + 1 < end && std::isdigit(static_cast<unsigned char>(s[i + 1])))) {
      // A pp-number, with digit separators (1'000) and exponent signs.
      ++i;
      while (i < end) {
        char d = s[i];
        if ((d == '+' || d == '-') && (s[i - 1] == 'e' || s[i - 1] == 'E' || s[i - 1] == 'p' || s[i - 1] == 'P')) {
          ++i;
        } else if (is_ident_char(d) || d == '.' || (d == '\'' && i + 1 < end && is_ident_char(s[i + 1]))) {
          ++i;
        } else {
          break;
        }
      }
      return;
    }
    if (is_ident_start(c)) {
      size_t b = i;
      while (i < end && is_ident_char(s[i])) ++i;
      std::string word = s.substr(b, i - b);
      int line = line_of(b);
      if (i < end && s[i] == '"' && (word == "R" || word == "u8R" || word == "uR" || word == "UR" || word == "LR")) {
        if (!skip_raw_string(i, end)) skip_literal(i, end);
        return;
      }
      if (word == "_Pragma" || word == "__pragma") {
        size_t p = i;
        skip_space(p, end);
        if (p < end && s[p] == '(') {
          ++p;
          skip_space(p, end);
          std::string content, bad;
          size_t q = p;
          if (read_string_literal(q, end, &content) && file_pragma(content, &bad))
            error(line, word + "(\"" + content + "\"): pragmas that name files ('" + bad + "') are not allowed");
        }
        return;
      }
      if (word == "__has_include" || word == "__has_include_next") {
        size_t p = i;
        skip_space(p, end);
        if (p < end && s[p] == '(') {
          ++p;
          skip_space(p, end);
          std::string name;
          NameKind kind = header_name(p, end, &name);
          if (kind == NameKind::angle) {
            check_header_name(line, name, word + "(");
          } else if (kind == NameKind::quoted) {
            error(line, word + "(\"...\"): quoted header names are not allowed (a candidate is a single file)");
          } else {
            error(line, word + "(...): the header name must be written out as <name>, not computed by a macro");
          }
          i = p;
        }
        return;
      }
      if (word == "include_alias" || word == "hdrstop" || word == "no_pch") {
        error(line, "'" + word + "' is not allowed (it names files for the preprocessor)");
      }
      return;
    }
    ++i;
  }

  // Scans code tokens of [i, end) (a directive's tail) for the constructs code_token checks.
  void code_tokens(size_t i, size_t end) {
    while (i < end) {
      if (is_hspace(t_.chars[i])) {
        ++i;
      } else if (!skip_comment(i)) {
        code_token(i, end);
      }
    }
  }

  // End of the logical line that starts at i: its newline, skipping block comments and literals.
  size_t line_end(size_t i) const {
    const std::string& s = t_.chars;
    while (i < s.size() && s[i] != '\n') {
      if (s[i] == '/' && i + 1 < s.size() && s[i + 1] == '*') {
        size_t e = s.find("*/", i + 2);
        i = e == std::string::npos ? s.size() : e + 2;
      } else if (s[i] == '"' || s[i] == '\'') {
        skip_literal(i, s.size());
      } else {
        ++i;
      }
    }
    return i;
  }

  // After `#` (or `%:`): one directive, up to (not including) the newline that ends it.
  void directive(size_t& i) {
    const std::string& s = t_.chars;
    int line = line_of(i > 0 ? i - 1 : 0);
    size_t end = line_end(i);
    skip_space(i, end);
    size_t b = i;
    while (i < end && is_ident_char(s[i])) ++i;
    std::string name = s.substr(b, i - b);
    if (name.empty()) {  // the null directive, or something the compiler will refuse
      if (i < end) mark_other(line);
      i = end;
      return;
    }
    if (name == "include" || name == "include_next" || name == "import" || name == "embed") {
      skip_space(i, end);
      std::string header;
      NameKind kind = header_name(i, end, &header);
      if (name != "include") {
        error(line, "#" + name + " is not allowed; use #include <name>");
      } else if (kind == NameKind::angle) {
        size_t before = out_.errors.size();
        check_header_name(line, header, "#include");
        if (out_.errors.size() == before) out_.includes.push_back({line, header});
      } else if (kind == NameKind::quoted) {
        error(line, "#include \"...\": quoted includes are not allowed (a candidate is a single file; "
                    "include CUDA and CCCL headers as <name>)");
      } else if (kind == NameKind::unterminated) {
        error(line, "#include <...: the header name has no closing '>'");
      } else {
        error(line, "#include of a macro (a computed include) is not allowed; write the header name as <name>");
      }
      code_tokens(i, end);
      i = end;
      return;
    }
    if (name != "pragma") mark_other(line);
    if (name == "define" || name == "undef") {
      skip_space(i, end);
      size_t m = i;
      while (m < end && is_ident_char(s[m])) ++m;
      std::string macro = s.substr(i, m - i);
      if (reserved_macro(macro))
        error(line, "#" + name + " " + macro + ": macro names starting with '_', THRUST_, CUB_, CCCL_ or LIBCUDACXX_ "
                    "configure the toolkit headers and may not be defined by a candidate");
    } else if (name == "pragma") {
      std::string text;
      for (size_t p = i; p < end;) {  // the pragma's text, comments removed
        if (skip_comment(p)) {
          text.push_back(' ');
        } else {
          text.push_back(s[p++]);
        }
      }
      std::string bad;
      if (file_pragma(text, &bad)) error(line, "#pragma" + text + ": pragmas that name files ('" + bad + "') are not allowed");
    } else if (name.find("include") != std::string::npos || name.find("import") != std::string::npos) {
      error(line, "#" + name + " is not allowed");
    }
    code_tokens(i, end);
    i = end;
  }

  const SplicedText& t_;
  const std::string& file_;
  SourceScan& out_;
};

}  // namespace

SourceScan scan_kernel_source(const std::string& source, const std::string& file_name) {
  SourceScan out;
  SplicedText text = splice_lines(source);
  Scanner(text, file_name, out).run();
  return out;
}

}  // namespace kforge
