#pragma once
// Where the tests find the repository's files: $KFORGE_SOURCE_DIR (ctest sets it), else ".".
#include <cstdlib>
#include <string>

namespace kforge::testing {

inline std::string source_dir() {
  const char* d = std::getenv("KFORGE_SOURCE_DIR");
  return d ? d : ".";
}

}  // namespace kforge::testing
