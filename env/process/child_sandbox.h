#pragma once
// Child processes that run tools over untrusted input (the extension kind's nvcc, g++ and linker
// over a candidate's sources): started in their own process group with a clean environment,
// resource limits, a seccomp filter (no sockets, tracing, mounts or namespaces; processes are
// allowed, compilers run their stages as processes) and, where the kernel has Landlock, a file
// system confined to the paths named here: read (and execute) under `read_paths`, read and write
// under `write_paths`, nothing else. So a source that names a file outside them, by any route the
// preprocessor or assembler offers (`#include`, `.incbin`, a macro), gets "permission denied".
//
// Everything is prepared in the parent (the Landlock ruleset, the filter's program, argv and the
// environment), so the child between fork and exec only makes system calls. Without Landlock
// (kernels before 5.13, gVisor) the file system is not confined: `confinement()` says so and why.
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kforge {

struct ChildLimits {
  double cpu_s = 300;                               // RLIMIT_CPU per process
  int64_t file_bytes = int64_t{4} << 30;            // RLIMIT_FSIZE: the largest file it may write
  int64_t address_space_bytes = int64_t{16} << 30;  // RLIMIT_AS per process; 0: none
  int open_files = 1024;                            // RLIMIT_NOFILE
};

struct ChildSandboxSpec {
  std::vector<std::string> read_paths;   // directories or files: read and execute
  std::vector<std::string> write_paths;  // directories or files: also write, create, remove
  std::vector<std::string> env;          // the whole environment, "NAME=value"
  ChildLimits limits;
};

// One child: argv[0] is a path; stdout and stderr go to `log` (created), stdin is /dev/null.
struct ChildCommand {
  std::vector<std::string> argv;
  std::string log;
  std::string cwd;  // empty: the parent's
};

class ChildSandbox {
 public:
  // Throws a runtime error if the filter cannot be made, or a path of the spec does not exist.
  explicit ChildSandbox(ChildSandboxSpec spec);
  ~ChildSandbox();
  ChildSandbox(const ChildSandbox&) = delete;
  ChildSandbox& operator=(const ChildSandbox&) = delete;

  // Starts the command in its own process group (kill(-pid) ends it whole). Throws a runtime error
  // when it cannot be started; a failure inside the child (a limit, the sandbox, exec) is exit 127
  // with the reason in the log.
  pid_t spawn(const ChildCommand& cmd) const;

  int landlock_abi() const { return landlock_abi_; }  // 0: the file system is not confined
  std::string filesystem() const;                     // "confined" or "unconfined: why"
  // {"filesystem": "confined" | "unconfined: why", "landlock_abi", "seccomp", "limits", "read_paths", "write_paths"}
  nlohmann::json confinement() const;

 private:
  ChildSandboxSpec spec_;
  int landlock_abi_ = 0;
  int ruleset_fd_ = -1;
  std::string landlock_why_;
  std::string filter_;  // the seccomp program: struct sock_filter[], as bytes
};

// The Landlock ABI the running kernel offers (0: none), and why not where it is 0.
int landlock_abi(std::string* why = nullptr);

}  // namespace kforge
