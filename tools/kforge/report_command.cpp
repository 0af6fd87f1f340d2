// kforge report: the checkpoint evaluation report, written in Python (tools/python/kforge_client/report/).
// kforge hands the whole command line to it: the project's interpreter (KFORGE_PYTHON_BIN, else the
// venv tools/setup.sh made) with tools/python on PYTHONPATH, `-m kforge_client.report ARGS...`.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include "tools/kforge/commands.h"

#ifndef KFORGE_SOURCE_DIR
#define KFORGE_SOURCE_DIR "."
#endif

namespace fs = std::filesystem;

namespace kforge::cli {

namespace {

// The first of KFORGE_PYTHON_BIN, $KFORGE_VENV/bin/python, <source>/.venv/bin/python (the order of
// tools/python_env.sh); empty when none is there.
std::string report_python() {
  if (const char* py = std::getenv("KFORGE_PYTHON_BIN"); py && *py) return py;
  const char* venv = std::getenv("KFORGE_VENV");
  fs::path p = (venv && *venv ? fs::path(venv) : fs::path(KFORGE_SOURCE_DIR) / ".venv") / "bin" / "python";
  return ::access(p.c_str(), X_OK) == 0 ? p.string() : std::string();
}

}  // namespace

int exec_report(int argc, char** argv) {
  std::string py = report_python();
  if (py.empty()) {
    std::fprintf(stderr, "kforge: io_error: no Python for kforge report: set KFORGE_PYTHON_BIN, or run tools/setup.sh "
                         "(it makes %s/.venv)\n", KFORGE_SOURCE_DIR);
    return 1;
  }
  std::string path = std::string(KFORGE_SOURCE_DIR) + "/tools/python";
  if (const char* old = std::getenv("PYTHONPATH"); old && *old) path += std::string(":") + old;
  ::setenv("PYTHONPATH", path.c_str(), 1);
  std::vector<char*> args = {py.data(), const_cast<char*>("-m"), const_cast<char*>("kforge_client.report")};
  for (int i = 2; i < argc; ++i) args.push_back(argv[i]);
  args.push_back(nullptr);
  ::execvp(py.c_str(), args.data());
  std::fprintf(stderr, "kforge: io_error: cannot run %s: %s\n", py.c_str(), std::strerror(errno));
  return 1;
}

}  // namespace kforge::cli
