#pragma once
// The one identifier rule of every name kforge reads (dimensions, graph names, kernels, workspaces,
// config keys of the static checks): [A-Za-z_][A-Za-z0-9_]*.
#include <cctype>
#include <string_view>

namespace kforge {

inline bool is_identifier(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

}  // namespace kforge
