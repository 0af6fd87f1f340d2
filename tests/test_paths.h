#pragma once
// Where the tests find the repository's files: $KFORGE_SOURCE_DIR (ctest sets it), else ".".
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <unistd.h>

namespace kforge::testing {

inline std::string source_dir() {
  const char* d = std::getenv("KFORGE_SOURCE_DIR");
  return d ? d : ".";
}

// A whole file's text ("" when it cannot be read).
inline std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
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
