#pragma once
// The extension build's child processes (extension_build.h): compiler, assembler and linker jobs run
// in the compilers' sandbox, several at a time, with a time limit; the files the build writes; and
// the split of its `.cu` files (cuda_split.h) into halves whose device code is a cubin linked as
// data (split_launchers.h). Shared by extension_build.cpp and split_build.cpp only.
#include <filesystem>
#include <string>
#include <vector>

#include "env/extension/extension_build.h"

namespace kforge {

// One child process: its step (for "where the time goes"), its command, the object or library it
// makes and the file that takes its stdout and stderr.
struct BuildJob {
  BuildStep step;
  std::vector<std::string> argv;
  std::string output;
  std::string log;
  // kforge-nvrtc-cubin's job: the step's tool when its log starts with kNvrtcFallbackMarker (nvcc
  // built the half), a line left out of the log a failure reports.
  std::string fallback_tool;
};

// Runs the jobs, `parallel` at a time; the first that fails (or outlasts the limit) stops the rest.
// Returns its index, or -1 when all succeeded; `timed_out` says which way it failed.
int run_build_jobs(const ChildSandbox& sandbox, std::vector<BuildJob>& jobs, int parallel, double timeout_s, bool* timed_out);
// run_build_jobs with the build's bookkeeping: each job's step into out.steps; on a failure (or a
// timeout) out.error_kind (compile_error, timeout) and out.log ("WHAT: LOG", the limit named on a
// timeout) and false; else each job's output moved from OUTPUT + tmp_suffix into place.
bool run_build_jobs_into(const ChildSandbox& sandbox, std::vector<BuildJob>& jobs, int parallel, double timeout_s,
                         const std::string& tmp_suffix, ExtensionBuildResult& out);
// A job's log, cut at 16 KiB.
std::string trimmed_build_log(const std::string& path);
// What the build makes of a candidate's file; anything but source and headers is a spec error.
ExtensionFileKind checked_file_kind(const std::string& path);
// Writes `text` to `p` (its folder made); an io error when it cannot.
void write_build_file(const std::filesystem::path& p, const std::string& text);

// A split .cu's halves in a build (cuda_split.h): the device half becomes a cubin, linked as data
// beside its kernels' symbols (split_launchers.h); the host half a g++ object.
struct SplitHalves {
  std::string source, device, host, cubin_symbol;
  std::vector<std::string> launched;
  bool host_uses_torch = false;
};

// A cubin the plan makes (or has cached), for its data object.
struct PlannedCubin {
  std::string path;
  const SplitHalves* halves = nullptr;
};

// The data object of each cubin (cached by its content and symbols), added to `objects`; false when
// `out` holds an error instead (a launched kernel its cubin does not hold exactly once, or the
// assembler's failure: the build then falls back to the unsplit source).
bool cubin_objects(const ChildSandbox& sandbox, const ExtensionToolchain& tc, const std::string& toolchain_id,
                   const std::vector<PlannedCubin>& cubins, const std::filesystem::path& work, const std::string& tmp_suffix,
                   ExtensionBuildResult& out, std::vector<std::string>& objects);

}  // namespace kforge
