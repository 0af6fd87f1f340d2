#include "env/launch/kernel_signature.h"

#include <algorithm>
#include <set>

#include "env/cuda_source/cuda_lexer.h"

namespace kforge {

namespace {

// The tokens declarations are read from: the lexer's (env/cuda_source/cuda_lexer.h) without the
// directives, punctuators of several characters (`>>` closing two template argument lists, `&&`,
// `...`) as single characters but `::`, and a stray character as punctuation.
std::vector<CudaToken> tokenize(const std::string& source) {
  std::vector<CudaToken> out;
  for (CudaToken& t : lex_cuda(source).tokens) {
    if (t.directive) continue;
    if (t.kind == TokenKind::other) t.kind = TokenKind::punctuator;
    if (t.kind != TokenKind::punctuator || t.text.size() == 1 || t.text == "::") {
      out.push_back(std::move(t));
      continue;
    }
    for (char c : t.text) {
      CudaToken single = t;
      single.text = std::string(1, c);
      out.push_back(std::move(single));
    }
  }
  return out;
}

bool is_punct(const CudaToken& t, const char* p) { return t.kind == TokenKind::punctuator && t.text == p; }
bool is_ident(const CudaToken& t, const char* id) { return t.kind == TokenKind::identifier && t.text == id; }

// Index just past the group that opens at `i` ('(' ... ')', '[' ... ']', '{' ... '}'), counting
// all three kinds of brackets; the end of the tokens when it never closes.
size_t skip_group(const std::vector<CudaToken>& t, size_t i) {
  int depth = 0;
  for (; i < t.size(); ++i) {
    if (t[i].kind != TokenKind::punctuator) continue;
    const std::string& p = t[i].text;
    if (p == "(" || p == "[" || p == "{")
      ++depth;
    else if (p == ")" || p == "]" || p == "}") {
      if (--depth == 0) return i + 1;
    }
  }
  return t.size();
}

// Identifiers followed by a parenthesised group that is not a parameter list.
bool is_attribute_call(const std::string& id) {
  static const std::set<std::string> names = {
      "__launch_bounds__", "__attribute__", "__declspec",      "alignas",  "__align__", "__maxnreg__", "__cluster_dims__",
      "decltype",          "__noinline__",  "__forceinline__", "noexcept", "throw",     "_Pragma",     "__pragma"};
  return names.count(id) > 0;
}

const std::set<std::string>& qualifiers() {
  static const std::set<std::string> q = {"const", "volatile", "__restrict__", "__restrict", "restrict",          "struct",
                                          "class", "union",    "enum",         "typename",   "__grid_constant__", "register"};
  return q;
}

bool is_builtin_type_word(const std::string& w) {
  static const std::set<std::string> words = {"void", "bool", "char", "short", "int", "long", "float", "double", "signed", "unsigned"};
  return words.count(w) > 0;
}

// The element type as written, qualifiers and std:: / cuda::std:: prefixes dropped.
std::string base_type_text(const std::vector<CudaToken>& toks) {
  std::vector<std::string> words;
  for (size_t k = 0; k < toks.size(); ++k) {
    const CudaToken& t = toks[k];
    if (t.kind == TokenKind::identifier && qualifiers().count(t.text)) continue;
    if (t.kind == TokenKind::identifier && (t.text == "std" || t.text == "cuda") && k + 1 < toks.size() && is_punct(toks[k + 1], "::")) {
      ++k;
      continue;
    }
    if (is_punct(t, "::") && words.empty()) continue;
    words.push_back(t.text);
  }
  std::string out;
  for (size_t k = 0; k < words.size(); ++k) {
    bool glue =
        k > 0 && (words[k] == "::" || words[k - 1] == "::" || words[k] == "<" || words[k - 1] == "<" || words[k] == ">" || words[k] == ",");
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
    if (w == "long")
      ++longs;
    else if (w == "unsigned")
      is_unsigned = true;
    else if (w == "short")
      is_short = true;
    else if (w == "char")
      is_char = true;
    else if (w != "signed" && w != "int")
      all_int_words = false;
  }
  if (all_int_words) {
    if (is_short || is_char || longs > 2) return {};
    // Device code follows the host's data model: LP64 on Linux, so long is 64 bits.
    if (longs == 0) return is_unsigned ? Scalar{ParamKind::u32, std::nullopt} : Scalar{ParamKind::i32, DType::int32};
    return is_unsigned ? Scalar{ParamKind::u64, std::nullopt} : Scalar{ParamKind::i64, DType::int64};
  }
  if (base == "int32_t") return {ParamKind::i32, DType::int32};
  if (base == "uint32_t") return {ParamKind::u32, std::nullopt};
  if (base == "int64_t" || base == "ptrdiff_t" || base == "intptr_t" || base == "ssize_t") return {ParamKind::i64, DType::int64};
  if (base == "uint64_t" || base == "size_t" || base == "uintptr_t") return {ParamKind::u64, std::nullopt};
  if (base == "float") return {ParamKind::f32, DType::float32};
  if (base == "double") return {ParamKind::f64, std::nullopt};
  if (base == "__half" || base == "half") return {ParamKind::other, DType::float16};
  if (base == "__nv_bfloat16" || base == "nv_bfloat16") return {ParamKind::other, DType::bfloat16};
  if (base == "bool") return {ParamKind::other, DType::boolean};
  return {};
}

std::string join_type(const std::vector<CudaToken>& toks) {
  std::string out;
  for (size_t k = 0; k < toks.size(); ++k) {
    const std::string& w = toks[k].text;
    bool glue = k > 0 && (w == "*" || w == "&" || w == "::" || w == "<" || w == ">" || w == "," || toks[k - 1].text == "::" ||
                          toks[k - 1].text == "<");
    if (k > 0 && !glue) out += ' ';
    out += w;
  }
  return out;
}

KernelParam read_param(std::vector<CudaToken> p) {
  KernelParam out;
  // Drop a default value, C++ attributes and alignment specifiers.
  for (size_t k = 0; k < p.size(); ++k)
    if (is_punct(p[k], "=")) {
      p.resize(k);
      break;
    }
  std::vector<CudaToken> t;
  bool array = false;
  for (size_t k = 0; k < p.size();) {
    if (is_punct(p[k], "[") && k + 1 < p.size() && is_punct(p[k + 1], "[")) {
      k = skip_group(p, k);
      continue;
    }
    if (p[k].kind == TokenKind::identifier && is_attribute_call(p[k].text) && k + 1 < p.size() && is_punct(p[k + 1], "(")) {
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
  if (t.size() >= 2 && t.back().kind == TokenKind::identifier && !qualifiers().count(t.back().text) &&
      !is_builtin_type_word(t.back().text) && !is_punct(t[t.size() - 2], "::")) {
    bool type_left = false;
    for (size_t k = 0; k + 1 < t.size(); ++k)
      if (!(t[k].kind == TokenKind::identifier && qualifiers().count(t[k].text))) type_left = true;
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
  std::vector<CudaToken> element(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(first_star));
  for (const CudaToken& e : element)
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

std::vector<KernelParam> read_params(const std::vector<CudaToken>& t, size_t open, size_t close) {
  std::vector<std::vector<CudaToken>> parts(1);
  int depth = 0, angle = 0;
  for (size_t k = open + 1; k + 1 < close; ++k) {
    const CudaToken& x = t[k];
    if (x.kind == TokenKind::punctuator) {
      if (x.text == "(" || x.text == "[" || x.text == "{")
        ++depth;
      else if (x.text == ")" || x.text == "]" || x.text == "}")
        --depth;
      else if (x.text == "<")
        ++angle;
      else if (x.text == ">" && angle > 0)
        --angle;
      else if (x.text == "," && depth == 0 && angle == 0) {
        parts.emplace_back();
        continue;
      }
    }
    parts.back().push_back(x);
  }
  std::vector<KernelParam> out;
  if (parts.size() == 1 && (parts[0].empty() || (parts[0].size() == 1 && is_ident(parts[0][0], "void")))) return out;
  for (auto& part : parts) out.push_back(read_param(part));
  return out;
}

class SignatureReader {
 public:
  explicit SignatureReader(std::vector<CudaToken> toks) : t_(std::move(toks)) {}

  std::vector<KernelSignature> read() {
    size_t i = 0;
    scope(i, false, false);
    return std::move(found_);
  }

 private:
  // Declarations until the end of the tokens, or past the '}' that closes this scope.
  void scope(size_t& i, bool extern_c, bool braced) {
    while (i < t_.size()) {
      const CudaToken& x = t_[i];
      if (is_punct(x, "}")) {
        ++i;
        if (braced) return;
        continue;  // stray: keep reading
      }
      if (is_punct(x, ";")) {
        ++i;
        continue;
      }
      if (is_ident(x, "extern") && i + 1 < t_.size() && t_[i + 1].kind == TokenKind::string) {
        bool c = t_[i + 1].value == "C";
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
      const CudaToken& x = t_[i];
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
        if (is_punct(x, "(") && i > start && t_[i - 1].kind == TokenKind::identifier && !is_attribute_call(t_[i - 1].text)) has_call = true;
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
      const CudaToken& x = t_[idx[n]];
      if (is_punct(x, "[") && is_punct(t_[idx[n + 1]], "[")) {  // [[attribute]]
        size_t end = skip_group(t_, idx[n]);
        while (n + 1 < idx.size() && idx[n + 1] < end) ++n;
        continue;
      }
      if (x.kind != TokenKind::identifier || !is_punct(t_[idx[n + 1]], "(")) continue;
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

  std::vector<CudaToken> t_;
  std::vector<KernelSignature> found_;
  std::vector<bool> defined_;
};

}  // namespace

std::vector<KernelSignature> parse_kernel_signatures(const std::string& source) { return SignatureReader(tokenize(source)).read(); }

}  // namespace kforge
