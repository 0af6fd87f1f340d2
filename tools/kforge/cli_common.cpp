// What every kforge executable shares: the subcommand actions, task paths, the process's start-up
// timestamps, and the hand-over from `kforge` (the commands that need no libtorch) to kforge-full.
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <map>
#include <sstream>

#include <unistd.h>

#include <CLI/CLI.hpp>

#include "configs/error.h"
#include "configs/file_reader.h"
#include "env/process/worker_protocol.h"
#include "tools/kforge/commands.h"

#ifndef KFORGE_SOURCE_DIR
#define KFORGE_SOURCE_DIR "."
#endif

namespace fs = std::filesystem;

namespace kforge::cli {

namespace {

std::map<CLI::App*, std::function<int()>>& actions() {
  static std::map<CLI::App*, std::function<int()>> a;
  return a;
}

int64_t g_main_ns = 0;
double g_process_to_main_ms = -1;

// Milliseconds from this process's start (its fork: /proc/self/stat's starttime, in clock ticks
// since boot) to now on CLOCK_BOOTTIME, the clock starttime counts on; -1 if unreadable.
double process_age_ms() {
  const std::string stat = try_read_file("/proc/self/stat").value_or("");
  size_t close = stat.rfind(')');  // the command name may hold spaces and parentheses
  if (close == std::string::npos) return -1;
  std::istringstream fields(stat.substr(close + 2));
  std::string f;
  // Fields after the name start at 3 (state); starttime is field 22.
  for (int i = 3; i < 22 && (fields >> f); ++i) {}
  unsigned long long ticks = 0;
  if (!(fields >> ticks)) return -1;
  long hz = ::sysconf(_SC_CLK_TCK);
  timespec now{};
  if (hz <= 0 || ::clock_gettime(CLOCK_BOOTTIME, &now) != 0) return -1;
  double now_ms = static_cast<double>(now.tv_sec) * 1e3 + static_cast<double>(now.tv_nsec) / 1e6;
  return now_ms - static_cast<double>(ticks) * 1e3 / static_cast<double>(hz);
}

}  // namespace

void mark_main() {
  g_main_ns = monotonic_ns();
  g_process_to_main_ms = process_age_ms();
}

int64_t main_monotonic_ns() { return g_main_ns; }

double process_to_main_ms() { return g_process_to_main_ms; }

void set_action(CLI::App* sub, std::function<int()> action) { actions()[sub] = std::move(action); }

void add_dataset_rewrite_options(CLI::App* sub, std::string& in, std::string& out) {
  sub->add_option("DATASET", in, "dataset.h5 (or .h5.xz, as shipped)")->required();
  sub->add_option("--out", out, "the dataset.h5 to write (replaced when it exists)")->required();
}

void check_dataset_rewrite(const std::string& in, const std::string& out) {
  KFORGE_CHECK(fs::path(out).extension() != ".xz", usage, "--out writes an uncompressed dataset.h5 (xz -9 it afterwards), not " << out);
  KFORGE_CHECK(!(fs::exists(in) && fs::exists(out) && fs::equivalent(in, out)), usage,
               "--out must not be the dataset it reads (" << in << ")");
}

int run_selected(CLI::App& app) {
  CLI::App* cur = &app;
  for (;;) {
    auto subs = cur->get_subcommands();
    if (subs.empty()) break;
    cur = subs.front();
  }
  auto it = actions().find(cur);
  KFORGE_CHECK(it != actions().end(), usage, "'" << cur->get_name() << "' needs a subcommand (see --help)");
  return it->second();
}

std::string duration(double s) {
  char buf[32];
  if (!std::isfinite(s) || s < 0) return "?";
  if (s < 60)
    std::snprintf(buf, sizeof buf, "%.0fs", s);
  else if (s < 3600)
    std::snprintf(buf, sizeof buf, "%dm%02ds", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
  else
    std::snprintf(buf, sizeof buf, "%dh%02dm", static_cast<int>(s) / 3600, static_cast<int>(s) / 60 % 60);
  return buf;
}

std::string resolve_task_path(const std::string& task) {
  if (fs::exists(task)) return task;
  for (const fs::path& root : {fs::path("."), fs::path(KFORGE_SOURCE_DIR)}) {
    fs::path p = root / "datasets" / "samples" / (task + ".yaml");
    if (fs::exists(p)) return p.string();
  }
  KFORGE_FAIL(io, task << ": no such task file (nor a sample datasets/samples/" << task << ".yaml)");
}

int exec_full(char** argv) {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  fs::path full = (ec ? fs::path(".") : self.parent_path()) / "kforge-full";
  ::execv(full.c_str(), argv);
  std::fprintf(stderr, "kforge: io_error: cannot run %s (every command but eval, demo, serve and record is there): %s\n", full.c_str(),
               std::strerror(errno));
  return 1;
}

std::string project_python() {
  if (const char* py = std::getenv("KFORGE_PYTHON_BIN"); py && *py) return py;
  const char* venv = std::getenv("KFORGE_VENV");
  fs::path p = (venv && *venv ? fs::path(venv) : fs::path(KFORGE_SOURCE_DIR) / ".venv") / "bin" / "python";
  return ::access(p.c_str(), X_OK) == 0 ? p.string() : std::string();
}

}  // namespace kforge::cli
