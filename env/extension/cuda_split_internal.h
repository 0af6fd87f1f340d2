#pragma once
// The split's reader and writer (cuda_split.h), one class over the tokens of the source: its
// reading and classifying of the top-level declarations are cuda_split.cpp's, the launches'
// rewrite and the two files' text cuda_split_emit.cpp's. Internal to env/extension.
#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "env/cuda_source/cuda_lexer.h"
#include "env/cuda_source/source_text.h"
#include "env/extension/cuda_split.h"
#include "env/extension/split_launchers.h"

namespace kforge::cuda_split_detail {

struct Refused {
  std::string why;
};

enum class Side { both, device, host };

// The tokens, every index checked: a source the reader mis-steps on (it is the candidate's) is a
// refusal, never a read past the end.
struct Tokens {
  std::vector<CudaToken> v;
  const CudaToken& operator[](size_t i) const {
    if (i >= v.size())
      throw Refused{"a source the split cannot read (token " + std::to_string(i) + " of " + std::to_string(v.size()) + ")"};
    return v[i];
  }
  size_t size() const { return v.size(); }
  bool empty() const { return v.empty(); }
  const CudaToken& back() const { return (*this)[v.size() - 1]; }
};

class Splitter {
 public:
  Splitter(const std::string& text, std::string path, std::string cubin_symbol);
  CudaSplit run();

 private:
  struct Element {
    bool directive = false;
    size_t first = 0, last = 0;  // tokens [first, last]
    Side side = Side::both;
    size_t head_end = 0;  // items: the first token of the body (`{` at depth 0), or last + 1
    bool kernel = false, device = false, templ = false;
    std::set<std::string> declares;
    std::string text;  // host items: with the launches rewritten
  };
  struct Kernel {
    std::vector<std::string> params, names;  // the launcher's parameter declarations and names
    std::string param_key;                   // to tell overloads apart
    bool templ = false, defined = false, launched = false;
    size_t first_decl = 0;  // the element that first declares it
  };

  [[noreturn]] void refuse(int line, const std::string& what) const { throw Refused{path_ + ":" + std::to_string(line) + ": " + what}; }

  const CudaToken& tk(size_t i) const { return t_[i]; }
  bool adjacent(size_t i) const { return i + 1 < t_.size() && t_[i].end == t_[i + 1].begin; }
  bool launch_open(size_t i) const { return i + 1 < t_.size() && t_[i].is("<<") && t_[i + 1].is("<") && adjacent(i); }
  bool launch_close(size_t i) const { return i + 1 < t_.size() && t_[i].is(">>") && t_[i + 1].is(">") && adjacent(i); }
  std::string chars(size_t b, size_t e) const { return sp_.chars.substr(b, e - b); }
  std::string span(size_t first, size_t last) const { return chars(t_[first].begin, t_[last].end); }

  // Reading and classifying (cuda_split.cpp).
  size_t directive_end(size_t i) const;
  int conditional(size_t i, size_t j) const;
  void check_directive(size_t i, size_t j) const;
  void read_elements();
  size_t skip_template(size_t i, size_t end) const;
  bool starts_type(size_t i, size_t end) const;
  Element read_item(size_t i);
  bool has_depth0(size_t b, size_t e, const char* what) const;
  bool has_any(size_t b, size_t e, const std::set<std::string>& words) const;
  int torch_use(size_t b, size_t e) const;
  std::set<std::string> declared(size_t b, size_t e) const;
  void read_params(size_t head_b, size_t head_e, const std::string& name, Kernel& k) const;
  void classify();
  void add_kernel(size_t ei);

  // Checking host code's names, rewriting its launches, writing the halves (cuda_split_emit.cpp).
  void check_names();
  std::string rewrite_launches(const Element& e);

  std::string line_mark(int line) const { return "#line " + std::to_string(line) + " \"" + path_ + "\"\n"; }
  LaunchedKernel launched_kernel(const std::string& name, const Kernel& k) const { return {name, k.params, k.names}; }

  CudaSplit emit();

  std::string path_, cubin_symbol_;
  bool host_uses_torch_ = false;
  SplicedText sp_;
  Tokens t_;
  std::vector<Element> elements_;
  std::map<std::string, Kernel> kernels_;
  int launches_ = 0;
};

}  // namespace kforge::cuda_split_detail
