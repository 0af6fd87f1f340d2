// Loading an extension library from its bytes (extension_library.h).
#include "env/extension/extension_library.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <mutex>
#include <set>
#include <string>

#include "configs/error.h"

namespace kforge {

LoadedExtension load_extension_library(const std::vector<uint8_t>& library) {
  static std::mutex mu;
  static std::set<const void*> seen;  // every handle and registry loaded so far
  std::lock_guard<std::mutex> lock(mu);
  const int fd = memfd_create("kforge-extension", MFD_CLOEXEC);
  KFORGE_CHECK(fd >= 0, runtime, "memfd_create failed for the extension library");
  size_t done = 0;
  while (done < library.size()) {
    ssize_t n = write(fd, library.data() + done, library.size() - done);
    if (n <= 0) {
      close(fd);
      KFORGE_FAIL(runtime, "writing the extension library to its memory file failed");
    }
    done += static_cast<size_t>(n);
  }
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const std::string why = dlerror();
    close(fd);
    KFORGE_FAIL(spec, "the extension library does not load: " << why);
  }
  using Entry = std::vector<kforge_ext::Function>* (*)();
  auto entry = reinterpret_cast<Entry>(dlsym(h, "kforge_ext_functions"));
  KFORGE_CHECK(entry, spec, "the extension library exports no kforge_ext_functions (not built by kforge)");
  const std::vector<kforge_ext::Function>* functions = entry();
  KFORGE_CHECK(!seen.count(h) && !seen.count(functions), internal,
               "loading an extension library gave an earlier library's " << (seen.count(h) ? "handle" : "registry"));
  seen.insert(h);
  seen.insert(functions);
  return {h, functions, fd};
}

}  // namespace kforge
