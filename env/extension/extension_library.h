#pragma once
// An extension candidate's shared library loaded into the GPU worker from its bytes (no file on
// disk): through an anonymous memory file that stays open for the life of the process. It must stay
// open: the dynamic loader matches a library by its path, and "/proc/self/fd/N" of a closed and
// reused descriptor names an earlier library, so dlopen would hand back that one (on the H200 every
// later candidate of a worker ran the first one's code). Each load is also checked to be a new
// handle with a registry of its own. Needs libtorch (the registry's types).
#include <cstdint>
#include <vector>

#include <kforge_ext.h>

namespace kforge {

struct LoadedExtension {
  void* handle = nullptr;
  const std::vector<kforge_ext::Function>* functions = nullptr;
  int fd = -1;  // the memory file (kept open)
};

// Loads `library` (a shared object the extension build made). One that does not load (a missing
// symbol, not an ELF file) or exports no kforge_ext_functions is a spec error naming why; a load
// that yields an earlier library's handle or registry is an internal error.
LoadedExtension load_extension_library(const std::vector<uint8_t>& library);

}  // namespace kforge
