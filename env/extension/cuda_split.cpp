// The split of a load_inline CUDA source into a torch-free .cu and a host .cpp (cuda_split.h):
// the source's top-level declarations read and classified (device, host or both), its kernels'
// parameters read for their launchers. The launches' rewrite and the two files' text are
// cuda_split_emit.cpp's (cuda_split_internal.h).
#include "env/extension/cuda_split.h"

#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

#include "env/cuda_source/cuda_lexer.h"
#include "env/cuda_source/source_text.h"
#include "env/extension/cuda_split_internal.h"

namespace kforge {

namespace cuda_split_detail {

namespace {

const std::set<std::string>& device_keywords() {
  static const std::set<std::string> k = {"__global__", "__device__", "__constant__", "__managed__", "__shared__"};
  return k;
}

// Names after which `(` is an attribute's or an operator's, not a declarator's.
const std::set<std::string>& not_declarators() {
  static const std::set<std::string> k = {"__launch_bounds__",
                                          "__align__",
                                          "alignas",
                                          "__attribute__",
                                          "__declspec",
                                          "decltype",
                                          "sizeof",
                                          "alignof",
                                          "noexcept",
                                          "static_assert",
                                          "__cluster_dims__",
                                          "__maxnreg__",
                                          "operator",
                                          "throw",
                                          "__builtin_align__",
                                          "if",
                                          "for",
                                          "while",
                                          "switch",
                                          "return"};
  return k;
}

// Words that make a type, not a parameter's name.
const std::set<std::string>& type_words() {
  static const std::set<std::string> k = {"void",  "char",     "short",        "int",        "long",
                                          "float", "double",   "signed",       "unsigned",   "bool",
                                          "const", "volatile", "__restrict__", "__restrict", "restrict",
                                          "auto",  "wchar_t",  "char16_t",     "char32_t",   "struct",
                                          "class", "union",    "enum",         "typename",   "__grid_constant__"};
  return k;
}

bool torch_include(const std::string& h) {
  for (const char* p : {"torch/", "ATen/", "c10/", "caffe2/", "pybind11/", "THC/"})
    if (h.rfind(p, 0) == 0) return true;
  return h == "Python.h";
}

bool device_include(const std::string& h) {
  for (const char* p :
       {"cooperative_groups", "mma.h", "cub/", "cuda/", "cuda_pipeline", "cuda_awbarrier", "sm_", "crt/", "cute/", "cutlass/"})
    if (h.rfind(p, 0) == 0) return true;
  return false;
}

}  // namespace

Splitter::Splitter(const std::string& text, std::string path, std::string cubin_symbol)
    : path_(std::move(path)), cubin_symbol_(std::move(cubin_symbol)) {
  sp_ = splice_lines(text);
  LexedSource lx = lex_cuda(sp_);
  t_.v = std::move(lx.tokens);
  if (lx.unterminated_comment_line) refuse(lx.unterminated_comment_line, "an unterminated comment");
}

CudaSplit Splitter::run() {
  read_elements();
  classify();
  check_names();
  return emit();
}

// The directive that starts at token i: its tokens [i, j).
size_t Splitter::directive_end(size_t i) const {
  size_t j = i + 1;
  while (j < t_.size() && t_[j].directive && !t_[j].line_start) ++j;
  return j;
}

// A directive's effect on conditional nesting: +1, -1 or 0.
int Splitter::conditional(size_t i, size_t j) const {
  if (i + 1 >= j || t_[i + 1].kind != TokenKind::identifier) return 0;
  const std::string& d = t_[i + 1].text;
  if (d == "if" || d == "ifdef" || d == "ifndef") return 1;
  if (d == "endif") return -1;
  return 0;
}

void Splitter::check_directive(size_t i, size_t j) const {
  // A condition on torch's macros would be decided one way in the halves' torch-free .cu and
  // another in cuda.cu as written.
  const std::string d = i + 1 < j && t_[i + 1].kind == TokenKind::identifier ? t_[i + 1].text : "";
  if (d == "if" || d == "ifdef" || d == "ifndef" || d == "elif" || d == "elifdef" || d == "elifndef") {
    for (size_t k = i + 2; k < j; ++k) {
      const std::string& w = t_[k].text;
      bool torch = t_[k].kind == TokenKind::identifier && w == "USE_ROCM";
      for (const char* p : {"TORCH_", "AT_", "C10_", "CAFFE2_", "PYBIND11_", "ATEN_"})
        torch = torch || (t_[k].kind == TokenKind::identifier && w.rfind(p, 0) == 0);
      if (torch) refuse(t_[i].line, "conditional compilation on '" + w + "', which torch's headers decide (the device half has none)");
    }
  }
  for (size_t k = i + 1; k < j; ++k) {
    if (t_[k].kind == TokenKind::identifier && (device_keywords().count(t_[k].text) || t_[k].text == "__host__"))
      refuse(t_[i].line, "a macro holds device code ('" + t_[k].text + "')");
    if (launch_open(k) || launch_close(k)) refuse(t_[i].line, "a macro holds a kernel launch");
  }
}

void Splitter::read_elements() {
  int cond = 0;
  size_t i = 0;
  while (i < t_.size()) {
    if (t_[i].directive) {
      const size_t j = directive_end(i);
      check_directive(i, j);
      cond += conditional(i, j);
      Element e;
      e.directive = true;
      e.first = i;
      e.last = j - 1;
      if (i + 2 < j && t_[i + 1].is("include")) {
        const CudaToken& h = t_[i + 2];
        const std::string name = h.kind == TokenKind::header_name || h.kind == TokenKind::string ? h.value : "";
        e.side = torch_include(name) ? Side::host : device_include(name) ? Side::device : Side::both;
        // torch's, or the candidate's own header (which may include torch's): the host half is
        // built with the precompiled torch header. Angle-bracket headers of no torch build without.
        if (torch_include(name) || h.kind != TokenKind::header_name) host_uses_torch_ = true;
      }
      elements_.push_back(e);
      i = j;
      continue;
    }
    if (cond > 0) refuse(t_[i].line, "a declaration inside conditional compilation (#if, #ifdef)");
    elements_.push_back(read_item(i));
    i = elements_.back().last + 1;
  }
  if (cond != 0) refuse(t_.empty() ? 1 : t_.back().line, "unbalanced conditional compilation");
}

// The skip over `template <...>` at i: the index after its closing `>`.
size_t Splitter::skip_template(size_t i, size_t end) const {
  if (i >= end || !t_[i].is("template") || i + 1 >= end || !t_[i + 1].is("<")) return i;
  int angle = 0;
  for (size_t k = i + 1; k < end; ++k) {
    if (t_[k].is("<")) ++angle;
    if (t_[k].is(">")) --angle;
    if (t_[k].is(">>")) angle -= 2;
    if (angle <= 0) return k + 1;
  }
  return end;
}

bool Splitter::starts_type(size_t i, size_t end) const {
  size_t k = skip_template(i, end);
  if (k < end && t_[k].is("typedef")) return true;
  return k < end && (t_[k].is("struct") || t_[k].is("class") || t_[k].is("union") || t_[k].is("enum"));
}

Splitter::Element Splitter::read_item(size_t i) {
  // (Its text starts a line in the halves: a `#` there would become a directive.)
  if (t_[i].is("#") || t_[i].is("##")) refuse(t_[i].line, "a '#' that starts no directive");
  Element e;
  e.first = i;
  e.head_end = std::string::npos;
  int paren = 0, brace = 0, cond = 0;
  int ends_at_brace = -1;  // the head read once: 1 when a closing `}` at depth 0 ends the item
  size_t j = i;
  for (; j < t_.size(); ++j) {
    const CudaToken& k = t_[j];
    if (k.directive) {
      if (k.line_start) {
        const size_t d = directive_end(j);
        check_directive(j, d);
        cond += conditional(j, d);
        if (t_[j + 1 < d ? j + 1 : j].is("include")) refuse(k.line, "an #include inside a declaration");
        j = d - 1;
      }
      continue;
    }
    if (k.is("(") || k.is("[")) ++paren;
    if ((k.is(")") || k.is("]")) && --paren < 0) refuse(k.line, "an unmatched '" + k.text + "'");
    if (k.is("{")) {
      if (brace == 0 && paren == 0 && e.head_end == std::string::npos) e.head_end = j;
      ++brace;
    }
    if (k.is("}")) {
      if (--brace < 0) refuse(k.line, "an unmatched '}'");
      if (brace == 0 && paren == 0) {
        if (e.head_end == std::string::npos) refuse(k.line, "braces opened inside parentheses at the top level");
        // A type's or an initializer's braces go on to the `;`; a function's body (and a
        // namespace's) ends the declaration.
        if (ends_at_brace < 0) {
          const bool type = starts_type(i, e.head_end) && !has_depth0(i, e.head_end, "(");
          const bool init = e.head_end > i && t_[e.head_end - 1].is("=");
          ends_at_brace = !type && !init;
        }
        if (ends_at_brace) break;
      }
    }
    if (k.is(";") && brace == 0 && paren == 0) break;
  }
  if (j >= t_.size()) refuse(t_[i].line, "a declaration that does not end");
  if (cond != 0) refuse(t_[i].line, "conditional compilation across a declaration's end");
  e.last = j;
  if (e.head_end == std::string::npos) e.head_end = j + 1;
  return e;
}

bool Splitter::has_depth0(size_t b, size_t e, const char* what) const {
  int depth = 0;
  for (size_t k = b; k < e && k < t_.size(); ++k) {
    if (t_[k].directive) continue;
    if (depth == 0 && t_[k].is(what)) return true;
    if (t_[k].is("(") || t_[k].is("[") || t_[k].is("{")) ++depth;
    if (t_[k].is(")") || t_[k].is("]") || t_[k].is("}")) --depth;
  }
  return false;
}

bool Splitter::has_any(size_t b, size_t e, const std::set<std::string>& words) const {
  for (size_t k = b; k < e; ++k)
    if (!t_[k].directive && t_[k].kind == TokenKind::identifier && words.count(t_[k].text)) return true;
  return false;
}

// torch's namespaces and macros, which the .cu will not have.
int Splitter::torch_use(size_t b, size_t e) const {
  for (size_t k = b; k < e; ++k) {
    if (t_[k].directive || t_[k].kind != TokenKind::identifier) continue;
    const std::string& s = t_[k].text;
    const bool torch_ns = s == "torch" || s == "at" || s == "c10" || s == "pybind11" || s == "py" || s == "caffe2";
    const bool ns = torch_ns && ((k + 1 < e && t_[k + 1].is("::")) || (k > b && t_[k - 1].is("namespace")));
    bool macro = false;
    for (const char* p : {"TORCH_", "AT_", "C10_", "PYBIND11_"})
      if (s.rfind(p, 0) == 0) macro = true;
    if (ns || macro) return t_[k].line;
  }
  return 0;
}

// Names a head declares: the declarators at depth 0 (a function's, a variable's), a type's name.
std::set<std::string> Splitter::declared(size_t b, size_t e) const {
  std::set<std::string> out;
  size_t k = skip_template(b, e);
  if (starts_type(b, e)) {
    const bool td = t_[k].is("typedef");
    if (td) {
      for (size_t q = e; q-- > k;)
        if (t_[q].kind == TokenKind::identifier) {
          out.insert(t_[q].text);
          break;
        }
    } else {
      for (size_t q = k + 1; q < e; ++q) {
        if (t_[q].is("class") || t_[q].is("struct") || t_[q].kind != TokenKind::identifier || not_declarators().count(t_[q].text)) continue;
        out.insert(t_[q].text);
        break;
      }
    }
    return out;
  }
  if (k < e && t_[k].is("using") && k + 2 < e && t_[k + 1].kind == TokenKind::identifier && t_[k + 2].is("=")) {
    out.insert(t_[k + 1].text);
    return out;
  }
  int depth = 0;
  bool in_init = false;
  for (size_t q = k; q < e; ++q) {
    const CudaToken& x = t_[q];
    if (x.directive) continue;
    if (x.is("(") || x.is("[") || x.is("{")) {
      ++depth;
      continue;
    }
    if (x.is(")") || x.is("]") || x.is("}")) {
      --depth;
      continue;
    }
    if (depth) continue;
    if (x.is("=")) in_init = true;
    if (x.is(",")) in_init = false;
    if (in_init || x.kind != TokenKind::identifier || not_declarators().count(x.text) || q + 1 >= t_.size()) continue;
    const CudaToken& n = t_[q + 1];
    if (n.is("(") || n.is("[") || n.is("=") || n.is(";") || n.is(",") || n.is("{")) out.insert(x.text);
  }
  return out;
}

// A kernel's parameters, for its launcher: declarations (named) and their names.
void Splitter::read_params(size_t head_b, size_t head_e, const std::string& name, Kernel& k) const {
  size_t open = std::string::npos;
  for (size_t q = head_b; q + 1 < head_e; ++q)
    if (t_[q].kind == TokenKind::identifier && t_[q].text == name && t_[q + 1].is("(")) {
      open = q + 1;
      break;
    }
  if (open == std::string::npos) refuse(t_[head_b].line, "kernel '" + name + "' has no parameter list the split can read");
  std::vector<std::vector<size_t>> params(1);
  int depth = 0, angle = 0;
  size_t close = open + 1;
  for (; close < head_e; ++close) {
    const CudaToken& x = t_[close];
    if (x.directive) refuse(x.line, "a directive inside kernel '" + name + "''s parameters");
    if (depth == 0 && x.is(")")) break;
    if (x.is("(") || x.is("[") || x.is("{")) ++depth;
    if (x.is(")") || x.is("]") || x.is("}")) --depth;
    if (x.is("<")) ++angle;
    if (x.is(">") && angle > 0) --angle;
    if (x.is(">>") && angle > 0) angle = std::max(0, angle - 2);
    if (x.is(",") && depth == 0 && angle == 0) {
      params.emplace_back();
      continue;
    }
    params.back().push_back(close);
  }
  if (close >= head_e) refuse(t_[open].line, "kernel '" + name + "''s parameter list does not end");
  k.params.clear();
  k.names.clear();
  k.param_key.clear();
  if (params.size() == 1 && (params[0].empty() || (params[0].size() == 1 && t_[params[0][0]].is("void")))) return;
  for (size_t p = 0; p < params.size(); ++p) {
    std::vector<size_t> toks;
    for (size_t q : params[p]) {
      const CudaToken& x = t_[q];
      if (x.is("=")) refuse(x.line, "kernel '" + name + "' has a default argument");
      if (x.is("(") || x.is("[") || x.is("..."))
        refuse(x.line, "kernel '" + name + "' has a parameter of array, function or variadic form");
      if (!x.is("__grid_constant__")) toks.push_back(q);  // a kernel's qualifier only, not a launcher's
    }
    if (toks.empty()) refuse(t_[open].line, "kernel '" + name + "' has an empty parameter");
    std::string decl;
    for (size_t q : toks) decl += (decl.empty() ? "" : " ") + t_[q].text;
    size_t typed = 0;  // the words that can make a type before a name
    for (size_t q : toks)
      if (!(t_[q].is("const") || t_[q].is("volatile") || t_[q].is("__restrict__") || t_[q].is("__restrict"))) ++typed;
    const CudaToken& last = t_[toks.back()];
    std::string pname;
    if (last.kind == TokenKind::identifier && !type_words().count(last.text) && typed > 1) {
      pname = last.text;
    } else {
      pname = "kforge_p" + std::to_string(p);
      decl += " " + pname;
    }
    k.params.push_back(decl);
    k.names.push_back(pname);
    k.param_key += decl + ",";
  }
}

void Splitter::classify() {
  for (size_t ei = 0; ei < elements_.size(); ++ei) {
    Element& e = elements_[ei];
    if (e.directive) continue;
    const size_t b = e.first, he = e.head_end, end = e.last + 1;
    const int line = t_[b].line;
    const size_t k0 = skip_template(b, he);
    e.templ = k0 != b;
    if (k0 >= he) refuse(line, "a template declaration the split cannot read");
    if (t_[k0].is("namespace") && he <= e.last) refuse(line, "a namespace (the split reads top-level declarations only)");
    if (t_[k0].is("extern") && k0 + 2 <= e.last && t_[k0 + 1].kind == TokenKind::string && t_[k0 + 2].is("{"))
      refuse(line, "an extern \"...\" { } block");
    const bool device_head = has_any(b, he, device_keywords());
    const bool host_kw = has_any(b, he, {"__host__"});
    const bool device_body = has_any(he, end, {"__device__", "__global__", "__host__"});
    const int torch_line = torch_use(b, end);
    e.declares = declared(b, he);
    if (device_head) {
      if (torch_line) refuse(torch_line, "device code uses torch's types or macros (the .cu of the split has no torch headers)");
      e.kernel = has_any(b, he, {"__global__"});
      if (host_kw && !e.kernel) {
        if (!(e.templ || has_any(b, he, {"inline", "__forceinline__", "__inline__", "constexpr", "static"})))
          refuse(line, "a __host__ __device__ function that is not inline, static or constexpr (it would be defined twice)");
        e.side = Side::both;
      } else {
        e.side = Side::device;
        e.device = true;
      }
      if (e.kernel) add_kernel(ei);
      continue;
    }
    const bool type_like = starts_type(b, he) || t_[k0].is("using") || t_[k0].is("namespace") || t_[k0].is("static_assert") ||
                           t_[k0].is(";") || (he > e.last && has_any(b, he, {"const", "constexpr"})) ||
                           (he <= e.last && t_[he - 1].is("=") && has_any(b, he, {"const", "constexpr"}));
    const bool device_ns = has_any(b, end, {"nvcuda", "cooperative_groups", "wmma", "cub"});
    if (type_like) {
      if (torch_line) {
        e.side = Side::host;
      } else if (device_body && !has_any(he, end, {"__host__"})) {
        e.side = Side::device;  // a type holding device-only code
        e.device = true;
      } else {
        e.side = device_ns ? Side::device : Side::both;
        e.device = device_ns;
      }
      continue;
    }
    if (device_body) refuse(line, "a device lambda (or __device__ code) inside host code");
    if (has_any(b, he, {"constexpr"}) && !torch_line && !device_ns) {
      e.side = Side::both;  // constexpr functions: callable from device code (--expt-relaxed-constexpr)
      continue;
    }
    e.side = Side::host;
  }
}

void Splitter::add_kernel(size_t ei) {
  const Element& e = elements_[ei];
  if (e.declares.size() != 1) refuse(t_[e.first].line, "a kernel declaration the split cannot name");
  const std::string name = *e.declares.begin();
  Kernel k;
  read_params(e.first, e.head_end, name, k);
  k.templ = e.templ;
  k.defined = e.head_end <= e.last;
  auto it = kernels_.find(name);
  if (it == kernels_.end()) {
    k.first_decl = ei;
    kernels_[name] = k;
    return;
  }
  Kernel& old = it->second;
  if (old.param_key != k.param_key || old.templ != k.templ) refuse(t_[e.first].line, "kernel '" + name + "' is overloaded");
  if (old.defined && k.defined) refuse(t_[e.first].line, "kernel '" + name + "' is defined twice");
  old.defined = old.defined || k.defined;
}

}  // namespace cuda_split_detail

using cuda_split_detail::Refused;
using cuda_split_detail::Splitter;

CudaSplit split_cuda_source(const std::string& text, const std::string& path, const std::string& cubin_symbol) {
  CudaSplit s;
  try {
    return Splitter(text, path, cubin_symbol).run();
  } catch (const Refused& r) {
    s.why = r.why.rfind(path + ":", 0) == 0 ? r.why : path + ": " + r.why;
  } catch (const std::exception& e) {  // (a reading error is a refusal: the source is built as it is)
    s.why = path + ": a source the split cannot read (" + e.what() + ")";
  }
  return s;
}

}  // namespace kforge
