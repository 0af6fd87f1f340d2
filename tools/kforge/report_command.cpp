// kforge report: the checkpoint evaluation report, written in Python (tools/python/kforge_client/report/).
// kforge hands the whole command line to it: the project's interpreter (KFORGE_PYTHON_BIN, else the
// venv tools/setup.sh made) with tools/python on PYTHONPATH, `-m kforge_client.report ARGS...`.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <unistd.h>

#include "tools/kforge/commands.h"

#ifndef KFORGE_SOURCE_DIR
#define KFORGE_SOURCE_DIR "."
#endif

namespace kforge::cli {

int exec_report(int argc, char** argv) {
  std::string py = project_python();
  if (py.empty()) {
    std::fprintf(stderr,
                 "kforge: io_error: no Python for kforge report: set KFORGE_PYTHON_BIN, or run tools/setup.sh "
                 "(it makes %s/.venv)\n",
                 KFORGE_SOURCE_DIR);
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
