// The extension build's child processes and files (build_jobs.h).
#include "env/extension/build_jobs.h"

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <thread>

#include "configs/error.h"
#include "configs/file_reader.h"
#include "env/extension/nvrtc_cubin.h"
#include "env/process/child_sandbox.h"
#include "env/process/clock.h"

namespace kforge {
namespace fs = std::filesystem;

void write_build_file(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
  KFORGE_CHECK(fs::exists(p), io, "cannot write " << p.string());
}

int run_build_jobs(const ChildSandbox& sandbox, std::vector<BuildJob>& jobs, int parallel, double timeout_s, bool* timed_out) {
  *timed_out = false;
  std::map<pid_t, size_t> running;
  std::vector<Clock::time_point> started(jobs.size());
  size_t next = 0;
  int failed = -1;
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  while ((next < jobs.size() && failed < 0) || !running.empty()) {
    while (failed < 0 && next < jobs.size() && static_cast<int>(running.size()) < std::max(1, parallel)) {
      started[next] = Clock::now();
      running[sandbox.spawn({jobs[next].argv, jobs[next].log, ""})] = next;
      ++next;
    }
    // Only this call's own children: waitpid(-1) would also reap another thread's build jobs (two
    // builders of one server) and the server's worker processes, whose owners then wait forever.
    int status = 0;
    pid_t pid = 0;
    for (const auto& [p, i] : running) {
      if (waitpid(p, &status, WNOHANG) == p) {
        pid = p;
        break;
      }
    }
    if (pid > 0) {
      size_t i = running[pid];
      running.erase(pid);
      jobs[i].step.ms = ms_since(started[i]);
      if ((!WIFEXITED(status) || WEXITSTATUS(status) != 0) && failed < 0) failed = static_cast<int>(i);
      continue;
    }
    if (Clock::now() > deadline && !running.empty()) {
      for (const auto& [p, i] : running) kill(-p, SIGKILL);
      if (failed < 0) {
        failed = static_cast<int>(running.begin()->second);
        *timed_out = true;
      }
      for (const auto& [p, i] : running) waitpid(p, &status, 0);
      running.clear();
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return failed;
}

bool run_build_jobs_into(const ChildSandbox& sandbox, std::vector<BuildJob>& jobs, int parallel, double timeout_s,
                         const std::string& tmp_suffix, ExtensionBuildResult& out) {
  bool timed_out = false;
  const int failed = run_build_jobs(sandbox, jobs, parallel, timeout_s, &timed_out);
  std::vector<bool> fell_back(jobs.size(), false);
  for (size_t i = 0; i < jobs.size(); ++i) {
    BuildJob& j = jobs[i];
    fell_back[i] = !j.fallback_tool.empty() && try_read_file(j.log).value_or("").rfind(kNvrtcFallbackMarker, 0) == 0;
    if (fell_back[i]) j.step.tool = j.fallback_tool;
    out.steps.push_back(j.step);
  }
  if (failed >= 0) {
    std::string log = trimmed_build_log(jobs[failed].log);
    if (fell_back[failed]) {  // nvcc's words only: the marker line out
      const size_t nl = log.find('\n');
      log.erase(0, nl == std::string::npos ? std::string::npos : nl + 1);
    }
    out.error_kind = timed_out ? "timeout" : "compile_error";
    out.log = jobs[failed].step.what + ": " + (timed_out ? "the compile outlasted its limit\n" : "") + log;
    return false;
  }
  for (const auto& j : jobs) fs::rename(j.output + tmp_suffix, j.output);
  return true;
}

std::string trimmed_build_log(const std::string& path) {
  std::string s = try_read_file(path).value_or("");
  constexpr size_t kMax = 16 * 1024;
  return s.size() > kMax ? s.substr(0, kMax) + "\n[... log cut at 16 KiB]" : s;
}

ExtensionFileKind checked_file_kind(const std::string& path) {
  const ExtensionFileKind k = extension_file_kind(path);
  KFORGE_CHECK(k != ExtensionFileKind::other, spec,
               "extension file '" << path << "': only .cu, .cpp (.cc, .cxx) and headers (.h, .cuh, .hpp, .inl) are built");
  return k;
}

}  // namespace kforge
