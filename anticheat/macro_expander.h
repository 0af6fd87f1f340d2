#pragma once
// The preprocessor as the static checks (static_checks.h) need it, on the tokens of cuda_lexer.h:
// conditionals (only `#if 0` groups are skipped; every other group is read), #define and #undef
// in source order, and macro expansion as the standard describes it (object- and function-like
// macros, variadic ones, # and ##, rescanning with per-token hide sets), bounded so that a macro
// bomb is reported instead of followed. Other directives are dropped: the include sandbox
// (env/compile/include_guard.h) judges them.
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "env/cuda_source/cuda_lexer.h"

namespace kforge {

// A token on its way through expansion.
struct MacroToken : CudaToken {
  MacroToken() = default;
  explicit MacroToken(CudaToken t) : CudaToken(std::move(t)) {}

  int definition = -1;       // a #define / #undef that stood here: index into PreprocessedSource::definitions
  bool placemarker = false;  // an empty argument next to ## (gone after substitution)
  std::vector<int> hide;     // sorted ids of macros this token may not expand again
  std::string via_macro;     // outermost macro whose expansion made the token ("" = as written)
  int via_line = 0;          // that macro's #define line
};

struct MacroDefinition {
  bool undef = false;
  std::string name;
  bool function_like = false;
  std::vector<std::string> params;  // a variadic macro's last parameter is __VA_ARGS__ or its name
  bool variadic = false;
  std::vector<MacroToken> body;
  int line = 0;
};

struct PreprocessedSource {
  std::vector<MacroToken> code;  // with a marker token (`definition` >= 0) where #define / #undef stood
  std::vector<MacroDefinition> definitions;
};

// The code tokens outside `#if 0` groups and the #define / #undef directives (`#if 0` ones aside).
PreprocessedSource read_directives(LexedSource lexed);

constexpr size_t kMaxExpandedTokens = 200000;
constexpr int kMaxExpansionDepth = 200;
constexpr size_t kMaxArgumentSteps = 5000000;  // tokens read while collecting macro arguments

struct Expansion {
  std::vector<MacroToken> tokens;
  bool overflowed = false;  // past the bounds above: the tokens after that point are dropped
  int overflow_line = 0;
};

// The code with every macro expanded, each #define / #undef applied where it stood.
Expansion expand_macros(const PreprocessedSource& source);

// Translation phase 6: adjacent string literals become one.
std::vector<MacroToken> concatenate_strings(std::vector<MacroToken> toks);

}  // namespace kforge
