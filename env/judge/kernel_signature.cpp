#include "env/judge/kernel_signature.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <set>

#include "anticheat/source_text.h"

namespace kforge {

namespace {

struct Tok {
  enum Kind { ident, number, string, chr, punct } kind;
  std::string text;
  int line;
};

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Tokens of the source with comments and preprocessor lines removed. Only what declarations need:
// identifiers, numbers, string and character literals, "::" and single punctuation characters.
// The source is read as every scan reads it (anticheat/source_text.h): lines spliced first, so a
// backslash-newline inside a name or between tokens reads as the compiler reads it.
std::vector<Tok> tokenize(const std::string& source) {
  const SplicedText sp = splice_lines(source);
  const std::string& s = sp.chars;
  std::vector<Tok> out;
  bool line_start = true;  // only whitespace so far on this line (a '#' here starts a directive)
  size_t i = 0, n = s.size();
  auto line_at = [&](size_t k) { return sp.lines.empty() ? 1 : sp.lines[std::min(k, sp.lines.size() - 1)]; };
  auto skip_quoted = [&](char quote) {  // from the opening quote; returns the contents
    size_t start = ++i;
    while (i < n && s[i] != quote && s[i] != '\n') {
      if (s[i] == '\\' && i + 1 < n) ++i;
      ++i;
    }
    std::string text = s.substr(start, i - start);
    if (i < n && s[i] == quote) ++i;
    return text;
  };
  while (i < n) {
    char c = s[i];
    if (c == '\n') {
      ++i, line_start = true;
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    if (c == '/' && skip_comment(s, i)) continue;
    if (c == '#' && line_start) {  // a directive (its continuations already spliced)
      while (i < n && s[i] != '\n') {
        if (s[i] == '/' && i + 1 < n && s[i + 1] == '*') break;  // a comment ends it here
        ++i;
      }
      continue;
    }
    line_start = false;
    int tok_line = line_at(i);
    if (ident_start(c)) {
      size_t start = i;
      while (i < n && ident_char(s[i])) ++i;
      std::string id = s.substr(start, i - start);
      if (i < n && s[i] == '"' && (id == "R" || id == "u8R" || id == "uR" || id == "UR" || id == "LR")) {
        // Raw string literal: R"delim( ... )delim".
        size_t open = s.find('(', i);
        std::string delim = open == std::string::npos ? "" : s.substr(i + 1, open - i - 1);
        size_t close = open == std::string::npos ? std::string::npos : s.find(")" + delim + "\"", open);
        size_t end = close == std::string::npos ? n : close + delim.size() + 2;
        out.push_back({Tok::string, "", tok_line});
        i = end;
        continue;
      }
      if (i < n && (s[i] == '"' || s[i] == '\'') && (id == "u8" || id == "u" || id == "U" || id == "L")) {
        char q = s[i];
        out.push_back({q == '"' ? Tok::string : Tok::chr, skip_quoted(q), tok_line});
        continue;
      }
      out.push_back({Tok::ident, id, tok_line});
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) ||
        (c == '.' && i + 1 < n && std::isdigit(static_cast<unsigned char>(s[i + 1])))) {
      size_t start = i;
      while (i < n) {
        char d = s[i];
        if (ident_char(d) || d == '.') ++i;
        else if (d == '\'' && i + 1 < n && ident_char(s[i + 1])) ++i;  // digit separator
        else if ((d == '+' || d == '-') && std::strchr("eEpP", s[i - 1])) ++i;
        else break;
      }
      out.push_back({Tok::number, s.substr(start, i - start), tok_line});
      continue;
    }
    if (c == '"' || c == '\'') {
      out.push_back({c == '"' ? Tok::string : Tok::chr, skip_quoted(c), tok_line});
      continue;
    }
    if (c == ':' && i + 1 < n && s[i + 1] == ':') {
      out.push_back({Tok::punct, "::", tok_line});
      i += 2;
      continue;
    }
    out.push_back({Tok::punct, std::string(1, c), tok_line});
    ++i;
  }
  return out;
}

bool is_punct(const Tok& t, const char* p) { return t.kind == Tok::punct && t.text == p; }
bool is_ident(const Tok& t, const char* id) { return t.kind == Tok::ident && t.text == id; }

// Index just past the group that opens at `i` ('(' ... ')', '[' ... ']', '{' ... '}'), counting
// all three kinds of brackets; the end of the tokens when it never closes.
size_t skip_group(const std::vector<Tok>& t, size_t i) {
  int depth = 0;
  for (; i < t.size(); ++i) {
    if (t[i].kind != Tok::punct) continue;
    const std::string& p = t[i].text;
    if (p == "(" || p == "[" || p == "{") ++depth;
    else if (p == ")" || p == "]" || p == "}") {
      if (--depth == 0) return i + 1;
    }
  }
  return t.size();
}

// Identifiers followed by a parenthesised group that is not a parameter list.
bool is_attribute_call(const std::string& id) {
  static const std::set<std::string> names = {
      "__launch_bounds__", "__attribute__", "__declspec", "alignas", "__align__", "__maxnreg__",
      "__cluster_dims__", "decltype", "__noinline__", "__forceinline__", "noexcept", "throw",
      "_Pragma", "__pragma"};
  return names.count(id) > 0;
}

const std::set<std::string>& qualifiers() {
  static const std::set<std::string> q = {"const", "volatile", "__restrict__", "__restrict",
                                          "restrict", "struct", "class", "union", "enum",
                                          "typename", "__grid_constant__", "register"};
  return q;
}

bool is_builtin_type_word(const std::string& w) {
  static const std::set<std::string> words = {"void", "bool", "char", "short", "int", "long",
                                              "float", "double", "signed", "unsigned"};
  return words.count(w) > 0;
}

// The element type as written, qualifiers and std:: / cuda::std:: prefixes dropped.
std::string base_type_text(const std::vector<Tok>& toks) {
  std::vector<std::string> words;
  for (size_t k = 0; k < toks.size(); ++k) {
    const Tok& t = toks[k];
    if (t.kind == Tok::ident && qualifiers().count(t.text)) continue;
    if (t.kind == Tok::ident && (t.text == "std" || t.text == "cuda") && k + 1 < toks.size() &&
        is_punct(toks[k + 1], "::")) {
      ++k;
      continue;
    }
    if (is_punct(t, "::") && words.empty()) continue;
    words.push_back(t.text);
  }
  std::string out;
  for (size_t k = 0; k < words.size(); ++k) {
    bool glue = k > 0 && (words[k] == "::" || words[k - 1] == "::" || words[k] == "<" ||
                          words[k - 1] == "<" || words[k] == ">" || words[k] == ",");
    if (k > 0 && !glue) out += ' ';
    out += words[k];
  }
  return out;
}

struct Scalar {
  ParamKind kind = ParamKind::other;
  std::optional<DType> dtype;  // the tensor dtype a pointer to it takes
};

Scalar classify(const std::string& base) {
  // Builtin integer spellings in any order: "unsigned long long int", "long signed", ...
  std::vector<std::string> words;
  {
    size_t p = 0;
    while (p < base.size()) {
      size_t q = base.find(' ', p);
      if (q == std::string::npos) q = base.size();
      words.push_back(base.substr(p, q - p));
      p = q + 1;
    }
  }
  bool all_int_words = !words.empty();
  int longs = 0;
  bool is_unsigned = false, is_short = false, is_char = false;
  for (const auto& w : words) {
    if (w == "long") ++longs;
    else if (w == "unsigned") is_unsigned = true;
    else if (w == "short") is_short = true;
    else if (w == "char") is_char = true;
    else if (w != "signed" && w != "int") all_int_words = false;
  }
  if (all_int_words) {
    if (is_short || is_char || longs > 2) return {};
    // Device code follows the host's data model: LP64 on Linux, so long is 64 bits.
    if (longs == 0) return is_unsigned ? Scalar{ParamKind::u32, std::nullopt} : Scalar{ParamKind::i32, DType::int32};
    return is_unsigned ? Scalar{ParamKind::u64, std::nullopt} : Scalar{ParamKind::i64, DType::int64};
  }
  if (base == "int32_t") return {ParamKind::i32, DType::int32};
  if (base == "uint32_t") return {ParamKind::u32, std::nullopt};
  if (base == "int64_t" || base == "ptrdiff_t" || base == "intptr_t" || base == "ssize_t")
    return {ParamKind::i64, DType::int64};
  if (base == "uint64_t" || base == "size_t" || base == "uintptr_t") return {ParamKind::u64, std::nullopt};
  if (base == "float") return {ParamKind::f32, DType::float32};
  if (base == "double") return {ParamKind::f64, std::nullopt};
  if (base == "__half" || base == "half") return {ParamKind::other, DType::float16};
  if (base == "__nv_bfloat16" || base == "nv_bfloat16") return {ParamKind::other, DType::bfloat16};
  if (base == "bool") return {ParamKind::other, DType::boolean};
  return {};
}

std::string join_type(const std::vector<Tok>& toks) {
  std::string out;
  for (size_t k = 0; k < toks.size(); ++k) {
    const std::string& w = toks[k].text;
    bool glue = k > 0 && (w == "*" || w == "&" || w == "::" || w == "<" || w == ">" || w == "," ||
                          toks[k - 1].text == "::" || toks[k - 1].text == "<");
    if (k > 0 && !glue) out += ' ';
    out += w;
  }
  return out;
}

KernelParam read_param(std::vector<Tok> p) {
  KernelParam out;
  // Drop a default value, C++ attributes and alignment specifiers.
  for (size_t k = 0; k < p.size(); ++k)
    if (is_punct(p[k], "=")) {
      p.resize(k);
      break;
    }
  std::vector<Tok> t;
  bool array = false;
  for (size_t k = 0; k < p.size();) {
    if (is_punct(p[k], "[") && k + 1 < p.size() && is_punct(p[k + 1], "[")) {
      k = skip_group(p, k);
      continue;
    }
    if (p[k].kind == Tok::ident && is_attribute_call(p[k].text) && k + 1 < p.size() && is_punct(p[k + 1], "(")) {
      k = skip_group(p, k + 1);
      continue;
    }
    if (is_punct(p[k], "[")) {  // `float x[]`: an array parameter is a pointer
      array = true;
      break;
    }
    t.push_back(p[k++]);
  }
  // The name: a trailing identifier that is not part of the type.
  if (t.size() >= 2 && t.back().kind == Tok::ident && !qualifiers().count(t.back().text) &&
      !is_builtin_type_word(t.back().text) && !is_punct(t[t.size() - 2], "::")) {
    bool type_left = false;
    for (size_t k = 0; k + 1 < t.size(); ++k)
      if (!(t[k].kind == Tok::ident && qualifiers().count(t[k].text))) type_left = true;
    if (type_left) {
      out.name = t.back().text;
      t.pop_back();
    }
  }
  out.type_text = join_type(t) + (array ? "[]" : "");
  int stars = array ? 1 : 0;
  size_t first_star = t.size();
  bool reference = false;
  for (size_t k = 0; k < t.size(); ++k) {
    if (is_punct(t[k], "*")) {
      ++stars;
      first_star = std::min(first_star, k);
    }
    if (is_punct(t[k], "&")) reference = true;
  }
  std::vector<Tok> element(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(first_star));
  for (const Tok& e : element)
    if (is_ident(e, "const")) out.is_const = true;
  std::string base = base_type_text(element);
  Scalar sc = classify(base);
  if (reference || stars > 1) {
    out.kind = ParamKind::other;
  } else if (stars == 1) {
    out.kind = ParamKind::pointer;
    out.pointee_text = base;
    out.pointee = sc.dtype;
  } else {
    out.kind = sc.kind;
  }
  return out;
}

std::vector<KernelParam> read_params(const std::vector<Tok>& t, size_t open, size_t close) {
  std::vector<std::vector<Tok>> parts(1);
  int depth = 0, angle = 0;
  for (size_t k = open + 1; k + 1 < close; ++k) {
    const Tok& x = t[k];
    if (x.kind == Tok::punct) {
      if (x.text == "(" || x.text == "[" || x.text == "{") ++depth;
      else if (x.text == ")" || x.text == "]" || x.text == "}") --depth;
      else if (x.text == "<") ++angle;
      else if (x.text == ">" && angle > 0) --angle;
      else if (x.text == "," && depth == 0 && angle == 0) {
        parts.emplace_back();
        continue;
      }
    }
    parts.back().push_back(x);
  }
  std::vector<KernelParam> out;
  if (parts.size() == 1 && (parts[0].empty() || (parts[0].size() == 1 && is_ident(parts[0][0], "void"))))
    return out;
  for (auto& part : parts) out.push_back(read_param(part));
  return out;
}

class Reader {
 public:
  explicit Reader(std::vector<Tok> toks) : t_(std::move(toks)) {}

  std::vector<KernelSignature> read() {
    size_t i = 0;
    scope(i, false, false);
    return std::move(found_);
  }

 private:
  // Declarations until the end of the tokens, or past the '}' that closes this scope.
  void scope(size_t& i, bool extern_c, bool braced) {
    while (i < t_.size()) {
      const Tok& x = t_[i];
      if (is_punct(x, "}")) {
        ++i;
        if (braced) return;
        continue;  // stray: keep reading
      }
      if (is_punct(x, ";")) {
        ++i;
        continue;
      }
      if (is_ident(x, "extern") && i + 1 < t_.size() && t_[i + 1].kind == Tok::string) {
        bool c = t_[i + 1].text == "C";
        i += 2;
        if (i < t_.size() && is_punct(t_[i], "{")) {
          ++i;
          scope(i, c, true);
        } else {
          declaration(i, c, false);
        }
        continue;
      }
      if (is_ident(x, "namespace")) {
        size_t k = i + 1;
        while (k < t_.size() && !is_punct(t_[k], "{") && !is_punct(t_[k], ";")) ++k;
        i = k + 1;
        if (k < t_.size() && is_punct(t_[k], "{")) scope(i, extern_c, true);
        continue;
      }
      if (is_ident(x, "template")) {
        declaration(i, extern_c, true);
        continue;
      }
      declaration(i, extern_c, false);
    }
  }

  // One declaration or definition from `i`: up to its ';' or past a function body.
  void declaration(size_t& i, bool extern_c, bool ignore) {
    size_t start = i;
    std::vector<size_t> body_free;  // indices of the declaration's tokens, bodies left out
    bool has_call = false, has_assign = false;
    while (i < t_.size()) {
      const Tok& x = t_[i];
      if (is_punct(x, ";")) {
        ++i;
        break;
      }
      if (is_punct(x, "}")) break;  // the enclosing scope ends: a malformed declaration
      if (is_punct(x, "{")) {
        i = skip_group(t_, i);
        if (has_call && !has_assign) break;  // a function body
        continue;
      }
      if (is_punct(x, "=") && !has_call) has_assign = true;
      if (is_punct(x, "(") || is_punct(x, "[")) {
        if (is_punct(x, "(") && i > start && t_[i - 1].kind == Tok::ident && !is_attribute_call(t_[i - 1].text))
          has_call = true;
        size_t end = skip_group(t_, i);
        for (size_t k = i; k < end; ++k) body_free.push_back(k);
        i = end;
        continue;
      }
      body_free.push_back(i++);
    }
    if (i == start) ++i;  // always make progress
    if (!extern_c || ignore) return;
    bool global = false, typedef_ = false;
    for (size_t k : body_free) {
      if (is_ident(t_[k], "__global__")) global = true;
      if (is_ident(t_[k], "typedef") || is_ident(t_[k], "using")) typedef_ = true;
    }
    if (!global || typedef_) return;
    signature(body_free, i);
  }

  void signature(const std::vector<size_t>& idx, size_t decl_end) {
    for (size_t n = 0; n + 1 < idx.size(); ++n) {
      const Tok& x = t_[idx[n]];
      if (is_punct(x, "[") && is_punct(t_[idx[n + 1]], "[")) {  // [[attribute]]
        size_t end = skip_group(t_, idx[n]);
        while (n + 1 < idx.size() && idx[n + 1] < end) ++n;
        continue;
      }
      if (x.kind != Tok::ident || !is_punct(t_[idx[n + 1]], "(")) continue;
      size_t open = idx[n + 1], close = skip_group(t_, open);
      if (is_attribute_call(x.text)) {
        while (n + 1 < idx.size() && idx[n + 1] < close) ++n;
        continue;
      }
      KernelSignature sig;
      sig.name = x.text;
      sig.line = x.line;
      sig.params = read_params(t_, open, close);
      bool definition = decl_end > 0 && is_punct(t_[decl_end - 1], "}");
      add(std::move(sig), definition);
      return;
    }
  }

  void add(KernelSignature sig, bool definition) {
    for (size_t k = 0; k < found_.size(); ++k) {
      if (found_[k].name != sig.name) continue;
      if (definition && !defined_[k]) {
        found_[k] = std::move(sig);
        defined_[k] = true;
      }
      return;
    }
    found_.push_back(std::move(sig));
    defined_.push_back(definition);
  }

  std::vector<Tok> t_;
  std::vector<KernelSignature> found_;
  std::vector<bool> defined_;
};

}  // namespace

std::vector<KernelSignature> parse_kernel_signatures(const std::string& source) {
  return Reader(tokenize(source)).read();
}

}  // namespace kforge
