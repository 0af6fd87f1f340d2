#pragma once
// Where the tests find the repository's files: $KFORGE_SOURCE_DIR (ctest sets it), else ".".
#include <cstdlib>
#include <filesystem>
#include <string>

#include <unistd.h>

namespace kforge::testing {

inline std::string source_dir() {
  const char* d = std::getenv("KFORGE_SOURCE_DIR");
  return d ? d : ".";
}

// A path for `name` in a temporary folder of this suite and process (created; the file removed).
inline std::string temp_path(const std::string& suite, const std::string& name) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / (suite + "_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::path p = dir / name;
  fs::remove(p);
  return p.string();
}

}  // namespace kforge::testing
