#include "anticheat/declarations.h"

#include <algorithm>
#include <set>
#include <string>
#include <utility>

namespace kforge {

namespace {

bool is_keyword(const std::string& w) {
  static const std::set<std::string> k = {"void",
                                          "bool",
                                          "char",
                                          "short",
                                          "int",
                                          "long",
                                          "float",
                                          "double",
                                          "signed",
                                          "unsigned",
                                          "auto",
                                          "wchar_t",
                                          "char8_t",
                                          "char16_t",
                                          "char32_t",
                                          "const",
                                          "volatile",
                                          "constexpr",
                                          "consteval",
                                          "constinit",
                                          "static",
                                          "extern",
                                          "inline",
                                          "register",
                                          "mutable",
                                          "thread_local",
                                          "struct",
                                          "class",
                                          "union",
                                          "enum",
                                          "typename",
                                          "template",
                                          "typedef",
                                          "using",
                                          "friend",
                                          "virtual",
                                          "explicit",
                                          "__device__",
                                          "__host__",
                                          "__global__",
                                          "__forceinline__",
                                          "__noinline__",
                                          "__inline__",
                                          "__managed__",
                                          "__constant__",
                                          "__shared__",
                                          "__restrict__",
                                          "__restrict",
                                          "restrict",
                                          "__grid_constant__",
                                          "operator",
                                          "decltype",
                                          "sizeof",
                                          "alignof",
                                          "noexcept",
                                          "return",
                                          "new",
                                          "delete",
                                          "this",
                                          "true",
                                          "false",
                                          "nullptr"};
  return k.count(w) > 0;
}

// Attribute-like words followed by a parenthesised argument that is not a declarator.
bool is_attribute(const std::string& w) {
  static const std::set<std::string> a = {
      "__align__",   "__launch_bounds__", "__attribute__", "__attribute", "alignas",    "__declspec", "decltype", "__cluster_dims__",
      "__maxnreg__", "__location__",      "noexcept",      "throw",       "__typeof__", "typeof",     "_Alignas"};
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

class DeclarationReader {
 public:
  explicit DeclarationReader(const std::vector<MacroToken>& toks) : toks_(toks) {}

  std::vector<PersistentVariable> run() {
    collect_type_names();
    read();
    return std::move(found_);
  }

 private:
  // Type names the source declares (for telling `T f(U);` from `T v(x);`).
  void collect_type_names() {
    static const char* builtin[] = {"size_t",   "ptrdiff_t",     "int8_t",         "int16_t",     "int32_t",   "int64_t",    "uint8_t",
                                    "uint16_t", "uint32_t",      "uint64_t",       "intptr_t",    "uintptr_t", "half",       "__half",
                                    "__half2",  "__nv_bfloat16", "__nv_bfloat162", "nv_bfloat16", "float2",    "float3",     "float4",
                                    "double2",  "int2",          "int3",           "int4",        "uint2",     "uint3",      "uint4",
                                    "char2",    "char4",         "uchar4",         "short2",      "longlong2", "ulonglong2", "dim3"};
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
    static const std::set<std::string> type_keywords = {"void",  "bool",   "char",   "short",    "int",  "long",
                                                        "float", "double", "signed", "unsigned", "auto", "wchar_t"};
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
    if (full.empty()) return;
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
      PersistentVariable p;
      p.name = v.name;
      p.storage = managed ? PersistentVariable::managed : device ? PersistentVariable::device : PersistentVariable::static_local_or_global;
      p.at = s.front();
      for (const MacroToken* t : s)
        if (t->kind == TokenKind::identifier && t->text == v.name) {
          p.at = t;
          break;
        }
      found_.push_back(std::move(p));
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
    static const std::set<std::string> trailing = {"const", "volatile",   "override", "final",     "mutable", "&",
                                                   "&&",    "__device__", "__host__", "constexpr", "noexcept"};
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
  void read() {
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

  const std::vector<MacroToken>& toks_;
  std::set<std::string> types_;
  std::vector<PersistentVariable> found_;
};

}  // namespace

std::vector<PersistentVariable> persistent_variables(const std::vector<MacroToken>& toks) { return DeclarationReader(toks).run(); }

}  // namespace kforge
