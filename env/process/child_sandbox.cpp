// Sandboxed child processes (child_sandbox.h): Landlock, seccomp and resource limits, prepared in
// the parent and applied by the child between fork and exec.
#include "env/process/child_sandbox.h"

#include <fcntl.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>

#include "configs/error.h"
#include "env/process/sandbox.h"

namespace kforge {

namespace {

// The file-system rights of each Landlock ABI (linux/landlock.h; the later ones by value, so that
// older headers build). Rights a kernel does not know must not be asked for.
constexpr uint64_t kReadRights = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
constexpr uint64_t kFileRights = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE;
constexpr uint64_t kRefer = uint64_t{1} << 13;     // ABI 2
constexpr uint64_t kTruncate = uint64_t{1} << 14;  // ABI 3
constexpr uint64_t kIoctlDev = uint64_t{1} << 15;  // ABI 5

uint64_t handled_rights(int abi) {
  uint64_t r = (uint64_t{1} << 13) - 1;  // ABI 1: execute .. make_sym
  if (abi >= 2) r |= kRefer;
  if (abi >= 3) r |= kTruncate;
  if (abi >= 5) r |= kIoctlDev;
  return r;
}

void add_rule(int ruleset, const std::string& path, uint64_t rights) {
  int fd = ::open(path.c_str(), O_PATH | O_CLOEXEC);
  KFORGE_CHECK(fd >= 0, runtime, "sandbox path " << path << ": " << std::strerror(errno));
  struct stat st {};
  ::fstat(fd, &st);
  // Rules on a file may only hold the rights that apply to files.
  if (!S_ISDIR(st.st_mode)) rights &= kFileRights | kTruncate | kIoctlDev;
  landlock_path_beneath_attr attr{};
  attr.allowed_access = rights;
  attr.parent_fd = fd;
  long rc = ::syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &attr, 0);
  const int err = errno;
  ::close(fd);
  KFORGE_CHECK(rc == 0, runtime, "landlock rule for " << path << ": " << std::strerror(err));
}

// Writes a reason into the child's log and ends it with 127 (only system calls: after fork).
[[noreturn]] void child_fail(const char* what) {
  const int err = errno;
  const char* msg = ::strerrordesc_np(err);  // glibc's table, untranslated: no allocation
  if (msg == nullptr) msg = "unknown error";
  (void)!::write(2, "kforge sandbox: ", 16);
  (void)!::write(2, what, std::strlen(what));
  (void)!::write(2, ": ", 2);
  (void)!::write(2, msg, std::strlen(msg));
  (void)!::write(2, "\n", 1);
  ::_exit(127);
}

void set_limit(int resource, rlim_t value, const char* what) {
  rlimit r{value, value};
  if (::setrlimit(resource, &r) != 0) child_fail(what);
}

}  // namespace

int landlock_abi(std::string* why) {
  long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  if (abi > 0) return static_cast<int>(abi);
  if (why)
    *why = errno == ENOSYS ? "the kernel has no Landlock" : errno == EOPNOTSUPP ? "Landlock is disabled at boot" : std::strerror(errno);
  return 0;
}

ChildSandbox::ChildSandbox(ChildSandboxSpec spec) : spec_(std::move(spec)) {
  filter_ = tool_seccomp_program();
  landlock_abi_ = kforge::landlock_abi(&landlock_why_);
  if (landlock_abi_ == 0) return;
  landlock_ruleset_attr attr{};
  attr.handled_access_fs = handled_rights(landlock_abi_);
  ruleset_fd_ = static_cast<int>(::syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0));
  KFORGE_CHECK(ruleset_fd_ >= 0, runtime, "landlock_create_ruleset: " << std::strerror(errno));
  ::fcntl(ruleset_fd_, F_SETFD, FD_CLOEXEC);
  for (const auto& p : spec_.read_paths) add_rule(ruleset_fd_, p, kReadRights);
  for (const auto& p : spec_.write_paths) add_rule(ruleset_fd_, p, handled_rights(landlock_abi_));
}

ChildSandbox::~ChildSandbox() {
  if (ruleset_fd_ >= 0) ::close(ruleset_fd_);
}

pid_t ChildSandbox::spawn(const ChildCommand& cmd) const {
  KFORGE_CHECK(!cmd.argv.empty(), usage, "a sandboxed child needs a command");
  // Everything the child uses is made here, before fork.
  std::vector<char*> argv, envp;
  for (const auto& a : cmd.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : spec_.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  sock_fprog prog{static_cast<unsigned short>(filter_.size() / sizeof(sock_filter)),
                  reinterpret_cast<sock_filter*>(const_cast<char*>(filter_.data()))};
  const ChildLimits& lim = spec_.limits;
  const rlim_t cpu = static_cast<rlim_t>(std::ceil(lim.cpu_s));
  const int ruleset = ruleset_fd_;
  const char* log = cmd.log.c_str();
  const char* cwd = cmd.cwd.empty() ? nullptr : cmd.cwd.c_str();

  pid_t pid = ::fork();
  KFORGE_CHECK(pid >= 0, runtime, "fork: " << std::strerror(errno));
  if (pid > 0) return pid;
  // The child: system calls only from here on.
  ::setpgid(0, 0);
  int out = ::open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0 || ::dup2(out, 1) < 0 || ::dup2(out, 2) < 0) ::_exit(127);
  int in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (in < 0 || ::dup2(in, 0) < 0) child_fail("stdin");
  if (cwd && ::chdir(cwd) != 0) child_fail("chdir");
  set_limit(RLIMIT_CPU, cpu, "RLIMIT_CPU");
  set_limit(RLIMIT_FSIZE, static_cast<rlim_t>(lim.file_bytes), "RLIMIT_FSIZE");
  set_limit(RLIMIT_NOFILE, static_cast<rlim_t>(lim.open_files), "RLIMIT_NOFILE");
  set_limit(RLIMIT_CORE, 0, "RLIMIT_CORE");
  if (lim.address_space_bytes > 0) set_limit(RLIMIT_AS, static_cast<rlim_t>(lim.address_space_bytes), "RLIMIT_AS");
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) child_fail("no_new_privs");
  if (ruleset >= 0 && ::syscall(SYS_landlock_restrict_self, ruleset, 0) != 0) child_fail("landlock_restrict_self");
  if (ruleset >= 0) ::close(ruleset);
  ::syscall(SYS_close_range, 3, ~0U, 0);  // no descriptor of the parent's reaches the tool (ENOSYS before 5.9)
  if (::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) child_fail("seccomp");
  ::execve(argv[0], argv.data(), envp.data());
  child_fail(argv[0]);
}

std::string ChildSandbox::filesystem() const { return landlock_abi_ > 0 ? "confined" : "unconfined: " + landlock_why_; }

nlohmann::json ChildSandbox::confinement() const {
  const ChildLimits& l = spec_.limits;
  return {
      {"filesystem", filesystem()},
      {"landlock_abi", landlock_abi_},
      {"seccomp", "no sockets, tracing, mounts, namespaces, BPF or modules"},
      {"limits",
       {{"cpu_s", l.cpu_s}, {"file_bytes", l.file_bytes}, {"address_space_bytes", l.address_space_bytes}, {"open_files", l.open_files}}},
      {"read_paths", spec_.read_paths},
      {"write_paths", spec_.write_paths}};
}

}  // namespace kforge
