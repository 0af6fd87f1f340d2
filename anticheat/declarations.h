#pragma once
// The variables with static storage duration a kernel source declares mutable: what the static
// checks' global_state rule (static_checks.h) refuses. Read from the tokens after macro expansion
// (macro_expander.h): statements are found by walking the braces, and every statement is judged
// alike in every scope, so that a scope misread through an unbalanced #else cannot hide a static.
// A statement declares such state when its specifiers say `static`, `__device__` or `__managed__`
// (neither `__shared__` nor `__constant__`, no typedef, using, friend or static_assert) and one of
// its declarators is not const: const and constexpr tables, pointers to const aside from
// `T* const`, functions (told from variables by their parameter lists) and class bodies are fine.
#include <string>
#include <vector>

#include "anticheat/macro_expander.h"

namespace kforge {

struct PersistentVariable {
  enum Storage { managed, device, static_local_or_global };
  std::string name;
  Storage storage = static_local_or_global;  // __managed__ first, then __device__, then static
  const MacroToken* at = nullptr;            // the token that names it (in `toks`)
};

// In source order.
std::vector<PersistentVariable> persistent_variables(const std::vector<MacroToken>& toks);

}  // namespace kforge
