#pragma once
// The kernels of a cubin, read from its ELF symbol table, and the symbol of a kernel the split
// launches (split_launchers.h): the builder looks each one up once, after `nvcc -cubin`, and links
// the pairs beside the cubin, so the launcher finds its kernel by name at run time without knowing
// how nvcc mangled it.
#include <string>
#include <vector>

namespace kforge {

struct CubinEntry {
  std::string symbol;  // as in the cubin: "ck" (extern "C"), "_Z1KPfi" (C++ linkage)
  bool local = false;  // a static kernel's binding
};

// The entry functions (st_other's CUDA entry bit on a function symbol). A text that is not a 64-bit
// ELF, or whose tables do not fit in it, is a runtime Error naming what is wrong.
std::vector<CubinEntry> cubin_entries(const std::string& image);

// The symbol of kernel `name`, declared at namespace scope, no template, not overloaded (what the
// split launches): `name` itself, or "_Z<length><name>" and its parameters. Empty when no entry or
// more than one matches; `why` then says which.
std::string kernel_symbol(const std::vector<CubinEntry>& entries, const std::string& name, std::string* why);

}  // namespace kforge
