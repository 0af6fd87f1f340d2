#include "env/compile/include_guard.h"

#include <cctype>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <vector>

#include "env/cuda_source/cuda_lexer.h"

namespace kforge {
namespace {

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// Names whose definition by a candidate could steer what the toolkit headers include.
bool reserved_macro(const std::string& name) {
  return starts_with(name, "_") || starts_with(name, "THRUST_") || starts_with(name, "CUB_") || starts_with(name, "CCCL_") ||
         starts_with(name, "LIBCUDACXX_");
}

// Pragma tokens (those after `pragma`, or a _Pragma string's) that name or create files.
bool file_pragma(const std::vector<CudaToken>& toks, size_t b, size_t e, std::string* word) {
  for (size_t k = b; k < e; ++k) {
    if (toks[k].kind != TokenKind::identifier) continue;  // literals and numbers do not count
    std::string lower;
    for (char ch : toks[k].text) lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(ch))));
    if (lower.find("include") != std::string::npos || lower.find("pch") != std::string::npos || lower == "dependency" ||
        lower == "hdrstop" || lower == "embed" || lower == "import") {
      *word = toks[k].text;
      return true;
    }
  }
  return false;
}

// The assembler's directives that read a file, in a string literal (inline asm): `.incbin`,
// `.include`, any case, as a word.
bool assembler_file_directive(const std::string& text) {
  std::string lower;
  for (char ch : text) lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(ch))));
  for (const char* d : {".incbin", ".include"}) {
    for (size_t at = lower.find(d); at != std::string::npos; at = lower.find(d, at + 1)) {
      const size_t after = at + std::strlen(d);
      if (after >= lower.size() || !(std::isalnum(static_cast<unsigned char>(lower[after])) || lower[after] == '_')) return true;
    }
  }
  return false;
}

class Scanner {
 public:
  Scanner(const SplicedText& text, const std::string& file, IncludePolicy policy, SourceScan& out)
      : t_(text), toks_(lex_cuda(text).tokens), file_(file), policy_(policy), out_(out) {}

  void run() {
    for (size_t i = 0; i < toks_.size();) {
      if (!toks_[i].directive) {
        mark_other(toks_[i].line);
        code_token(i, toks_.size());
        ++i;
        continue;
      }
      size_t end = i + 1;  // past the directive's last token
      while (end < toks_.size() && toks_[end].directive && !toks_[end].line_start) ++end;
      directive(i, end);
      i = end;
    }
  }

 private:
  void error(int line, const std::string& message) {
    std::ostringstream os;
    os << file_ << ":" << line << ": " << message;
    out_.errors.push_back(os.str());
  }

  void mark_other(int line) {
    if (out_.first_non_include_line == 0) out_.first_non_include_line = line;
  }

  // The token's characters as written (digraphs as spelled).
  std::string spelling(const CudaToken& t) const { return t_.chars.substr(t.begin, t.end - t.begin); }

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

  // A quoted header name under IncludePolicy::quoted_in_candidate: a file of the candidate.
  void check_quoted_name(int line, const std::string& literal, const std::string& what) {
    const std::string name = literal.size() >= 2 ? literal.substr(1, literal.size() - 2) : "";
    const std::string shown = what + " \"" + name + "\"";
    if (name.empty() || name[0] == '/' || name.find('\\') != std::string::npos) {
      error(line,
            shown + ": absolute paths, backslashes and empty names are not allowed; name a file of the candidate by its relative path");
      return;
    }
    std::filesystem::path resolved = (std::filesystem::path(file_).parent_path() / name).lexically_normal();
    if (resolved.empty() || *resolved.begin() == "..") {
      error(line, shown + ": leaves the candidate's files");
      return;
    }
    // Only headers: a .cu or .cpp included would bring code the scans read as another kind of file.
    if (!is_header_path(resolved.string())) error(line, shown + ": only headers (.h, .cuh, .hpp, .inl) of the candidate may be included");
  }

  // What names the header after `#include` or `__has_include(`: the token at k (end: none).
  enum class NameKind { angle, quoted, computed, unterminated };
  NameKind header_name(size_t k, size_t end) const {
    if (k >= end) return NameKind::computed;
    if (toks_[k].kind == TokenKind::header_name) return NameKind::angle;
    const char c = t_.chars[toks_[k].begin];
    if (c == '"') return NameKind::quoted;
    return c == '<' ? NameKind::unterminated : NameKind::computed;
  }

  // A token of code (or of a directive's tail; `end` is past its last token) at k.
  void code_token(size_t k, size_t end) {
    const CudaToken& t = toks_[k];
    if (t.kind == TokenKind::string && assembler_file_directive(t.value))
      error(t.line, "a string holding the assembler's '.incbin' or '.include' (it reads a file) is not allowed");
    if (t.kind != TokenKind::identifier) return;
    const std::string& word = t.text;
    const bool call = k + 1 < end && toks_[k + 1].is("(");
    if ((word == "_Pragma" || word == "__pragma") && call && k + 2 < end && toks_[k + 2].kind == TokenKind::string) {
      const CudaToken& literal = toks_[k + 2];
      std::string text = spelling(literal), bad;  // shown from its quote to the end of its first line
      size_t quote = text.find('"');
      std::string content = text.substr(quote + 1, text.size() - quote - (literal.unterminated ? 1 : 2));
      content = content.substr(0, content.find('\n'));
      std::vector<CudaToken> pragma = lex_cuda_fragment(literal.value);
      if (file_pragma(pragma, 0, pragma.size(), &bad))
        error(t.line, word + "(\"" + content + "\"): pragmas that name files ('" + bad + "') are not allowed");
    } else if ((word == "__has_include" || word == "__has_include_next") && call) {
      NameKind kind = header_name(k + 2, end);
      if (kind == NameKind::angle) {
        check_header_name(t.line, toks_[k + 2].value, word + "(");
      } else if (kind == NameKind::quoted && policy_.quoted_in_candidate) {
        check_quoted_name(t.line, spelling(toks_[k + 2]), word + "(");
      } else if (kind == NameKind::quoted) {
        error(t.line, word + "(\"...\"): quoted header names are not allowed (a candidate is a single file)");
      } else {
        error(t.line, word + "(...): the header name must be written out as <name>, not computed by a macro");
      }
    } else if (word == "include_alias" || word == "hdrstop" || word == "no_pch") {
      error(t.line, "'" + word + "' is not allowed (it names files for the preprocessor)");
    }
  }

  void code_tokens(size_t k, size_t end) {
    for (; k < end; ++k) code_token(k, end);
  }

  // #include and its kin: toks_[k] follows the directive's name.
  void include(int line, const std::string& name, size_t k, size_t end) {
    NameKind kind = header_name(k, end);
    if (name != "include") {
      error(line, "#" + name + " is not allowed; use #include <name>");
    } else if (kind == NameKind::angle) {
      size_t before = out_.errors.size();
      check_header_name(line, toks_[k].value, "#include");
      if (out_.errors.size() == before) out_.includes.push_back({line, toks_[k].value});
    } else if (kind == NameKind::quoted && policy_.quoted_in_candidate) {
      check_quoted_name(line, spelling(toks_[k]), "#include");
    } else if (kind == NameKind::quoted) {
      error(line,
            "#include \"...\": quoted includes are not allowed (a candidate is a single file; "
            "include CUDA and CCCL headers as <name>)");
    } else if (kind == NameKind::unterminated) {
      error(line, "#include <...: the header name has no closing '>'");
    } else {
      error(line, "#include of a macro (a computed include) is not allowed; write the header name as <name>");
    }
    code_tokens(kind == NameKind::angle ? k + 1 : k, end);
  }

  // The directive of toks_[b, end), toks_[b] being its `#`.
  void directive(size_t b, size_t end) {
    const int line = toks_[b].line;
    size_t k = b + 1;
    if (k == end) return;                          // the null directive
    if (toks_[k].kind != TokenKind::identifier) {  // something the compiler will refuse
      mark_other(line);
      return;
    }
    const std::string name = toks_[k++].text;
    if (name == "include" || name == "include_next" || name == "import" || name == "embed") {
      include(line, name, k, end);
      return;
    }
    if (name != "pragma") mark_other(line);
    if (name == "define" || name == "undef") {
      std::string macro = k < end && toks_[k].kind == TokenKind::identifier ? toks_[k].text : "";
      if (policy_.reserved_macros && reserved_macro(macro))
        error(line, "#" + name + " " + macro +
                        ": macro names starting with '_', THRUST_, CUB_, CCCL_ or LIBCUDACXX_ "
                        "configure the toolkit headers and may not be defined by a candidate");
    } else if (name == "pragma") {
      std::string text, bad;  // the pragma as written, comments as one space
      for (size_t p = k; p < end; ++p) text += (toks_[p].space_before ? " " : "") + spelling(toks_[p]);
      if (file_pragma(toks_, k, end, &bad)) error(line, "#pragma" + text + ": pragmas that name files ('" + bad + "') are not allowed");
    } else if (name.find("include") != std::string::npos || name.find("import") != std::string::npos) {
      error(line, "#" + name + " is not allowed");
    }
    code_tokens(k, end);
  }

  const SplicedText& t_;
  const std::vector<CudaToken> toks_;
  const std::string& file_;
  const IncludePolicy policy_;
  SourceScan& out_;
};

}  // namespace

bool is_header_path(const std::string& path) {
  const std::string ext = std::filesystem::path(path).extension().string();
  return ext == ".h" || ext == ".cuh" || ext == ".hpp" || ext == ".inl";
}

SourceScan scan_kernel_source(const std::string& source, const std::string& file_name, IncludePolicy policy) {
  SourceScan out;
  SplicedText text = splice_lines(source);
  Scanner(text, file_name, policy, out).run();
  return out;
}

}  // namespace kforge
