#include "env/process/worker_client.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "configs/error.h"
#include "env/process/clock.h"

#ifndef KFORGE_BUILD_DIR
#define KFORGE_BUILD_DIR "."
#endif

namespace kforge {

namespace {

void set_limit(int resource, int64_t value) {
  if (value <= 0) return;
  rlimit r{static_cast<rlim_t>(value), static_cast<rlim_t>(value)};
  setrlimit(resource, &r);
}

}  // namespace

WorkerProcess::WorkerProcess(WorkerSpawn spawn) : spawn_(std::move(spawn)) {
  // A worker that dies turns writes to its pipe into EPIPE errors, not a signal that kills us.
  std::signal(SIGPIPE, SIG_IGN);
}

WorkerProcess::~WorkerProcess() { stop(); }

std::string WorkerProcess::reap_description(int status) const {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return std::string("killed by signal ") + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  return "ended";
}

void WorkerProcess::forget_child() {
  ::close(to_child_);
  ::close(from_child_);
  to_child_ = from_child_ = -1;
  pid_ = -1;
  awaiting_hello_ = false;
  stop_requested_ = false;
}

std::string WorkerProcess::kill_and_reap() {
  if (pid_ <= 0) return "not running";
  ::kill(pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {}
  std::string how = reap_description(status);
  forget_child();
  return how;
}

std::string WorkerProcess::start() {
  std::string why = spawn();
  return why.empty() ? await_hello() : why;
}

std::string WorkerProcess::spawn() {
  int req[2], rep[2];
  if (::pipe2(req, O_CLOEXEC) != 0) return std::string("pipe: ") + std::strerror(errno);
  if (::pipe2(rep, O_CLOEXEC) != 0) {
    std::string why = std::string("pipe: ") + std::strerror(errno);
    ::close(req[0]);
    ::close(req[1]);
    return why;
  }
  std::vector<std::string> argv_s = {spawn_.executable};
  argv_s.insert(argv_s.end(), spawn_.args.begin(), spawn_.args.end());
  argv_s.insert(argv_s.end(), {"--request-fd", "3", "--reply-fd", "4"});
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t parent = ::getpid();
  times_ = WorkerStartTimes{};
  times_.spawn_ns = monotonic_ns();
  pid_t pid = ::fork();
  if (pid < 0) {
    std::string why = std::string("fork: ") + std::strerror(errno);
    for (int fd : {req[0], req[1], rep[0], rep[1]}) ::close(fd);
    return why;
  }
  if (pid == 0) {
    // Child: the protocol on fds 3 and 4; stdout joins stderr so a worker's prints never mix with
    // the caller's output; it dies with its parent.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) _exit(111);
    // Move the pipe ends above the target numbers first: in a process with only 0-2 open they *are*
    // 3 and 4, and dup2 onto itself would keep close-on-exec.
    int in = ::fcntl(req[0], F_DUPFD, 10), out = ::fcntl(rep[1], F_DUPFD, 10);
    ::dup2(in, 3);
    ::dup2(out, 4);
    ::close(in);
    ::close(out);
    ::dup2(2, 1);
    for (int fd : {req[0], req[1], rep[0], rep[1]})
      if (fd > 4) ::close(fd);
    set_limit(RLIMIT_FSIZE, spawn_.max_file_bytes);
    set_limit(RLIMIT_NOFILE, spawn_.max_open_files);
    set_limit(RLIMIT_AS, spawn_.max_address_space);
    rlimit no_core{0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    for (const auto& [k, v] : spawn_.env) ::setenv(k.c_str(), v.c_str(), 1);
    ::execv(argv[0], argv.data());
    std::fprintf(stderr, "kforge-worker: exec %s failed: %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  ::close(req[0]);
  ::close(rep[1]);
  pid_ = pid;
  to_child_ = req[1];
  from_child_ = rep[0];
  ++starts_;
  // Hello: the worker replies once it is ready (a GPU worker after creating its context). The
  // request fits the pipe, so this never waits for the worker.
  try {
    write_frame(to_child_, Json{{"type", "hello"}});
  } catch (const Error& e) {
    return std::string(e.what()) + " (" + kill_and_reap() + ")";
  }
  awaiting_hello_ = true;
  return "";
}

std::string WorkerProcess::await_hello() {
  awaiting_hello_ = false;
  Json reply;
  int64_t left_ms = static_cast<int64_t>(spawn_.start_timeout_s * 1000) - (monotonic_ns() - times_.spawn_ns) / 1000000;
  try {
    ReadStatus st = read_frame(from_child_, reply, static_cast<int>(std::max<int64_t>(left_ms, 0)));
    if (st == ReadStatus::timeout) return "no hello within " + std::to_string(spawn_.start_timeout_s) + " s (" + kill_and_reap() + ")";
    if (st == ReadStatus::closed) return "worker " + kill_and_reap() + " before saying hello";
  } catch (const Error& e) {
    return std::string(e.what()) + " (" + kill_and_reap() + ")";
  }
  times_.hello_ns = monotonic_ns();
  hello_ = reply;  // kept when it refuses too: its start-up figures say how far it got
  if (!reply.value("ok", false)) {
    std::string msg = reply.contains("error") ? reply["error"].value("message", "") : "";
    kill_and_reap();
    return "worker refused to start: " + msg;
  }
  return "";
}

bool WorkerProcess::launch() {
  if (pid_ > 0) return true;
  return spawn().empty();
}

const Json& WorkerProcess::hello() {
  // A worker that ended between requests is reaped and started again here: the request it could
  // not take is not the next candidate's fault.
  if (pid_ > 0 && !awaiting_hello_) reap_within(0);
  if (pid_ <= 0 || awaiting_hello_) {
    std::string why = pid_ <= 0 ? start() : await_hello();
    if (!why.empty()) KFORGE_FAIL(runtime, "cannot start " << spawn_.executable << ": " << why);
  }
  return hello_;
}

Json WorkerProcess::startup_report() const {
  if (times_.hello_ns == 0) return nullptr;
  auto ms = [](int64_t from, int64_t to) { return static_cast<double>(to - from) / 1e6; };
  Json r = {
      {"spawn_at_ns", times_.spawn_ns}, {"hello_at_ns", times_.hello_ns}, {"spawn_to_hello_ms", ms(times_.spawn_ns, times_.hello_ns)}};
  const Json& s = hello_.contains("startup") ? hello_["startup"] : Json();
  if (!s.is_object()) return r;
  int64_t pre = s.value("preinit_ns", int64_t{0}), main = s.value("main_ns", int64_t{0}), ready = s.value("ready_ns", int64_t{0});
  if (pre > 0) {
    r["spawn_to_preinit_ms"] = ms(times_.spawn_ns, pre);
    r["static_init_ms"] = ms(pre, main);
  }
  r["spawn_to_main_ms"] = ms(times_.spawn_ns, main);
  r["init_ms"] = ms(main, ready);
  r["phases_ms"] = s.value("phases_ms", Json::object());
  if (hello_.contains("start_ms") && hello_["start_ms"].is_object()) r["worker_start_ms"] = hello_["start_ms"];  // a GPU worker's own split
  r["spawn_to_ready_ms"] = ms(times_.spawn_ns, ready);
  r["ready_at_ns"] = ready;
  r["hello_wait_ms"] = ms(ready, times_.hello_ns);
  return r;
}

WorkerReply WorkerProcess::call(const Json& request, double timeout_s) {
  WorkerReply r;
  auto t0 = std::chrono::steady_clock::now();
  auto fail = [&](const std::string& kind, const std::string& msg) {
    r.ok = false;
    r.error_kind = kind;
    r.error_message = msg;
    r.wall_ms = ms_since(t0);
    return r;
  };
  // A worker that ended between requests is reaped and started again here: the request it could
  // not take is not the next candidate's fault.
  if (pid_ > 0 && !awaiting_hello_) reap_within(0);
  if (pid_ <= 0 || awaiting_hello_) {
    std::string why = pid_ <= 0 ? start() : await_hello();
    if (!why.empty()) return fail(worker_error::worker_crashed, "the worker could not start: " + why);
  }
  Json reply;
  try {
    write_frame(to_child_, request);
    ReadStatus st = read_frame(from_child_, reply, static_cast<int>(timeout_s * 1000));
    if (st == ReadStatus::timeout) {
      kill_and_reap();
      return fail(worker_error::timeout,
                  "no reply within " + std::to_string(static_cast<int>(timeout_s)) + " s; the worker was killed and will be restarted");
    }
    if (st == ReadStatus::closed) return fail(worker_error::worker_crashed, "the worker " + kill_and_reap() + " during the request");
  } catch (const Error& e) {
    return fail(worker_error::worker_crashed, std::string(e.what()) + "; the worker " + kill_and_reap());
  }
  r.wall_ms = ms_since(t0);
  r.body = reply;
  r.ok = reply.value("ok", false);
  if (!r.ok) {
    const Json& e = reply.contains("error") ? reply["error"] : Json::object();
    r.error_kind = e.value("kind", std::string(worker_error::internal));
    r.error_message = e.value("message", std::string("the worker gave no reason"));
  }
  // The worker exits after a fatal reply; reap it so the next call starts a fresh one.
  if (reply.value("fatal", false) && !reap_within(2000)) kill_and_reap();
  return r;
}

bool WorkerProcess::reap_within(int ms) {
  if (pid_ <= 0) return true;
  auto reaped = [&] {
    int status = 0;
    pid_t r;
    while ((r = ::waitpid(pid_, &status, WNOHANG)) < 0 && errno == EINTR) {}
    if (r != pid_) return false;
    forget_child();
    return true;
  };
  if (reaped()) return true;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
#ifdef SYS_pidfd_open
  // Woken the moment the worker exits (Linux 5.3+), not on a polling interval.
  int pfd = static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0));
  if (pfd >= 0) {
    for (;;) {
      int left =
          static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count());
      pollfd p{pfd, POLLIN, 0};
      int n = ::poll(&p, 1, std::max(left, 0));
      if (n < 0 && errno == EINTR) continue;
      break;
    }
    ::close(pfd);
    return reaped();
  }
#endif
  while (std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (reaped()) return true;
  }
  return reaped();
}

void WorkerProcess::request_stop() {
  if (pid_ <= 0 || stop_requested_) return;
  try {
    write_frame(to_child_, Json{{"type", "shutdown"}});
    stop_requested_ = true;
  } catch (const Error&) {}
}

void WorkerProcess::stop() {
  if (pid_ <= 0) return;
  // A worker still starting up reads the request only once ready (a compile worker's warm-up, a
  // GPU worker's context): it was never used, so it is killed rather than waited for. (A killed
  // compile worker's private directory is removed by the next compiler that starts.)
  if (awaiting_hello_) {
    kill_and_reap();
    return;
  }
  request_stop();
  if (stop_requested_ && reap_within(2000)) return;
  kill_and_reap();
}

std::string find_worker_executable(const std::string& name) {
  namespace fs = std::filesystem;
  std::vector<fs::path> candidates;
  if (const char* dir = std::getenv("KFORGE_WORKER_DIR")) candidates.push_back(fs::path(dir) / name);
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    candidates.push_back(self.parent_path() / name);
    candidates.push_back(self.parent_path().parent_path() / "env" / name);
  }
  candidates.push_back(fs::path(KFORGE_BUILD_DIR) / "env" / name);
  for (const auto& c : candidates)
    if (fs::exists(c)) return c.string();
  KFORGE_FAIL(io, "cannot find the " << name << " executable (set KFORGE_WORKER_DIR, or build the " << name << " target)");
}

}  // namespace kforge
