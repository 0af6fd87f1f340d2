// The kforge commands written in Python, to which kforge hands the whole command line (each tool's own
// --help included): the project's interpreter (KFORGE_PYTHON_BIN, else the venv tools/setup.sh made)
// with tools/python on PYTHONPATH.
//   kforge report ARGS...    -m kforge_client.report ARGS... (tools/python/kforge_client/report/): the
//                            checkpoint evaluation report
//   kforge baseline ARGS...  tools/dataset/baseline_ray.py ARGS... (issue 32): the dataset's GPU stage
//                            over every GPU of a Ray cluster, baselines kept by GPU model, torch and CUDA
//                            version (tools/dataset/SYNTH_GPU.md, "Baselines on a Ray cluster"); its
//                            driver asks this kforge for the rows (KFORGE_BIN, when not set already)
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

namespace kforge::cli {

namespace {

// Execs the project's Python with `head` then argv[2:]; returns only on failure (1).
int exec_python(const char* command, std::vector<std::string> head, int argc, char** argv) {
  std::string py = project_python();
  if (py.empty()) {
    std::fprintf(stderr,
                 "kforge: io_error: no Python for kforge %s: set KFORGE_PYTHON_BIN, or run tools/setup.sh "
                 "(it makes %s/.venv)\n",
                 command, KFORGE_SOURCE_DIR);
    return 1;
  }
  std::string path = std::string(KFORGE_SOURCE_DIR) + "/tools/python";
  if (const char* old = std::getenv("PYTHONPATH"); old && *old) path += std::string(":") + old;
  ::setenv("PYTHONPATH", path.c_str(), 1);
  std::vector<char*> args = {py.data()};
  for (auto& h : head) args.push_back(h.data());
  for (int i = 2; i < argc; ++i) args.push_back(argv[i]);
  args.push_back(nullptr);
  ::execvp(py.c_str(), args.data());
  std::fprintf(stderr, "kforge: io_error: cannot run %s: %s\n", py.c_str(), std::strerror(errno));
  return 1;
}

}  // namespace

int exec_python_command(int argc, char** argv) {
  const std::string command = argv[1];
  if (command == "report") return exec_python("report", {"-m", "kforge_client.report"}, argc, argv);
  // The baseline driver's kforge: this one (kforge-full beside it has the export it asks for).
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) ::setenv("KFORGE_BIN", self.c_str(), 0);
  return exec_python("baseline", {std::string(KFORGE_SOURCE_DIR) + "/tools/dataset/baseline_ray.py"}, argc, argv);
}

}  // namespace kforge::cli
