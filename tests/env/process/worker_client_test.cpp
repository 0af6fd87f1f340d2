// The supervisor against the real kforge-worker, in compile mode (no GPU needed): replies,
// timeouts, crashes, fatal replies and restarts, resource limits and the seccomp sandbox.
#include "env/process/worker_client.h"

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "configs/error.h"
#include "env/compile/compile_request.h"

using namespace kforge;

namespace {

WorkerSpawn compile_worker(bool hooks = true, bool seccomp = true) {
  WorkerSpawn s;
  s.executable = find_worker_executable("kforge-compile-worker");
  s.args = {"--mode", "compile", "--seccomp", seccomp ? "1" : "0"};
  if (hooks) s.env = {{"KFORGE_WORKER_TEST_HOOKS", "1"}};
  s.max_open_files = 256;
  s.max_file_bytes = 64 << 20;
  s.start_timeout_s = 60;
  return s;
}

const char* kKernel = R"(extern "C" __global__ void twice(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
})";

std::string proc_limit(pid_t pid, const std::string& name) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/limits");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(name, 0) == 0) return line;
  return "";
}

}  // namespace

// A compile request through the contract (env/compile/compile_request.h).
Json compile_request() { return to_json(CompileRequest{kKernel, CompileOptions{}}); }

TEST(WorkerProtocol, FramesRoundTripAndMalformedFramesAreErrors) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  Json msg = {{"type", "x"}, {"blob", Json::binary(std::vector<uint8_t>{1, 2, 3})}, {"n", 7}};
  write_frame(fds[1], msg);
  Json back;
  ASSERT_EQ(read_frame(fds[0], back, 1000), ReadStatus::ok);
  EXPECT_EQ(back, msg);
  EXPECT_EQ(read_frame(fds[0], back, 50), ReadStatus::timeout);
  uint8_t huge[4] = {0xff, 0xff, 0xff, 0x7f};  // claims 2 GiB
  ASSERT_EQ(write(fds[1], huge, 4), 4);
  EXPECT_THROW(read_frame(fds[0], back, 1000), Error);
  uint8_t garbage[6] = {2, 0, 0, 0, 0xc1, 0xc1};  // 0xc1 is never valid msgpack
  ASSERT_EQ(write(fds[1], garbage, 6), 6);
  EXPECT_THROW(read_frame(fds[0], back, 1000), Error);
  close(fds[1]);
  EXPECT_EQ(read_frame(fds[0], back, 1000), ReadStatus::closed);
  close(fds[0]);
}

// A compromised compile worker (NVRTC runs the policy's source) cannot crash its supervisor with a
// frame nested 200 000 deep: the frame is a malformed-message error, not a stack overflow.
TEST(WorkerProtocol, ADeeplyNestedFrameIsAnErrorNotACrash) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  std::string body(200000, '\x91');  // a one-element array, nested
  body += '\xc0';
  uint32_t n = static_cast<uint32_t>(body.size());
  std::string frame = {static_cast<char>(n), static_cast<char>(n >> 8), static_cast<char>(n >> 16), static_cast<char>(n >> 24)};
  frame += body;
  std::thread writer([&] {  // the frame is larger than a pipe's buffer
    size_t off = 0;
    while (off < frame.size()) {
      ssize_t w = write(fds[1], frame.data() + off, frame.size() - off);
      if (w <= 0) break;
      off += static_cast<size_t>(w);
    }
  });
  Json back;
  try {
    read_frame(fds[0], back, 5000);
    ADD_FAILURE() << "a 200 000-deep frame was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("nested deeper than 64 levels"), std::string::npos) << e.what();
  }
  writer.join();
  close(fds[0]);
  close(fds[1]);
}

TEST(WorkerProcess, CompilesThroughTheWorker) {
  WorkerProcess w(compile_worker());
  WorkerReply r = w.call(compile_request(), 60);
  ASSERT_TRUE(r.ok) << r.error_message;
  EXPECT_TRUE(r.body["compile"]["ok"].get<bool>()) << r.body["compile"]["log"];
  EXPECT_GT(r.body["cubin"].get_binary().size(), 100u);
  EXPECT_EQ(r.body["compile"]["kernels"][0], "twice");
  EXPECT_EQ(w.hello()["mode"], "compile");
  EXPECT_TRUE(w.hello()["seccomp"].get<bool>());
}

TEST(WorkerProcess, UnknownRequestIsAnErrorReplyAndTheWorkerLivesOn) {
  WorkerProcess w(compile_worker());
  WorkerReply r = w.call({{"type", "evaluate"}}, 30);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error_kind, "bad_request");
  pid_t pid = w.pid();
  EXPECT_TRUE(w.call({{"type", "test_sleep"}, {"seconds", 0.01}}, 30).ok);
  EXPECT_EQ(w.pid(), pid);
  EXPECT_EQ(w.starts(), 1);
}

TEST(WorkerProcess, ACompileRequestMissingAFieldIsRefusedByName) {
  WorkerProcess w(compile_worker());
  Json req = compile_request();
  req["options"].erase("maxrregcount");
  WorkerReply r = w.call(req, 60);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error_kind, "bad_request");
  EXPECT_NE(r.error_message.find("request.options.maxrregcount is missing"), std::string::npos) << r.error_message;
  req = compile_request();
  req["options"]["use_fast_math"] = 1;
  r = w.call(req, 60);
  EXPECT_NE(r.error_message.find("request.options.use_fast_math has the wrong type"), std::string::npos) << r.error_message;
  EXPECT_TRUE(w.call(compile_request(), 60).ok);
}

TEST(WorkerProcess, ACrashCostsOneRequestAndTheWorkerRestarts) {
  WorkerProcess w(compile_worker());
  WorkerReply r = w.call({{"type", "test_crash"}}, 30);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error_kind, "worker_crashed");
  EXPECT_NE(r.error_message.find("killed by signal 6"), std::string::npos) << r.error_message;
  WorkerReply next = w.call(compile_request(), 60);
  EXPECT_TRUE(next.ok) << next.error_message;
  EXPECT_EQ(w.starts(), 2);
}

TEST(WorkerProcess, ARequestPastItsTimeoutKillsTheWorker) {
  WorkerProcess w(compile_worker());
  pid_t first = w.hello().empty() ? -1 : w.pid();
  WorkerReply r = w.call({{"type", "test_sleep"}, {"seconds", 30}}, 0.5);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error_kind, "timeout");
  EXPECT_LT(r.wall_ms, 5000);
  EXPECT_FALSE(w.running());
  EXPECT_NE(kill(first, 0), 0) << "the old worker must be gone";
  EXPECT_TRUE(w.call({{"type", "test_sleep"}, {"seconds", 0.01}}, 30).ok);
  EXPECT_EQ(w.starts(), 2);
}

TEST(WorkerProcess, AFatalReplyRestartsTheWorker) {
  WorkerProcess w(compile_worker());
  WorkerReply r = w.call({{"type", "test_fatal"}}, 30);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error_kind, "runtime_error");
  EXPECT_FALSE(w.running());
  EXPECT_TRUE(w.call({{"type", "test_sleep"}, {"seconds", 0.01}}, 30).ok);
  EXPECT_EQ(w.starts(), 2);
}

// A GPU worker ends after a reply that succeeded (a candidate's thread outlived its call): the reply
// says fatal, and the next request runs in a fresh worker instead of failing on a closed pipe.
TEST(WorkerProcess, AWorkerEndingAfterAGoodReplyIsRestartedForTheNextRequest) {
  WorkerProcess w(compile_worker());
  WorkerReply r = w.call({{"type", "test_good_then_exit"}}, 30);
  EXPECT_TRUE(r.ok);
  EXPECT_TRUE(r.body.value("fatal", false));
  WorkerReply next = w.call({{"type", "test_sleep"}, {"seconds", 0.01}}, 30);
  EXPECT_TRUE(next.ok) << next.error_kind << ": " << next.error_message;
  EXPECT_EQ(w.starts(), 2);
}

TEST(WorkerProcess, AWorkerThatDiedBetweenRequestsDoesNotFailTheNextOne) {
  WorkerProcess w(compile_worker());
  ASSERT_TRUE(w.call({{"type", "test_exit_soon"}}, 30).ok);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // it has exited by now
  WorkerReply next = w.call({{"type", "test_sleep"}, {"seconds", 0.01}}, 30);
  EXPECT_TRUE(next.ok) << next.error_kind << ": " << next.error_message;
  EXPECT_EQ(w.starts(), 2);
}

TEST(WorkerProcess, TestHooksAreOffUnlessEnabled) {
  WorkerProcess w(compile_worker(/*hooks=*/false));
  WorkerReply r = w.call({{"type", "test_crash"}}, 30);
  EXPECT_EQ(r.error_kind, "bad_request");
  EXPECT_TRUE(w.running());
}

TEST(WorkerProcess, ResourceLimitsApplyToTheWorker) {
  WorkerProcess w(compile_worker());
  w.hello();
  EXPECT_NE(proc_limit(w.pid(), "Max open files").find("256"), std::string::npos) << proc_limit(w.pid(), "Max open files");
  EXPECT_NE(proc_limit(w.pid(), "Max file size").find(std::to_string(64 << 20)), std::string::npos);
  EXPECT_NE(proc_limit(w.pid(), "Max core file size").find(" 0 "), std::string::npos) << proc_limit(w.pid(), "Max core file size");
}

TEST(WorkerProcess, SeccompRefusesProcessesSocketsAndExec) {
  WorkerProcess sandboxed(compile_worker(true, true));
  WorkerReply r = sandboxed.call({{"type", "test_sandbox"}}, 30);
  ASSERT_TRUE(r.ok) << r.error_message;
  EXPECT_EQ(r.body["probe"], "fork: EPERM; socket: EPERM; execve: EPERM");
  // The same probe without the filter proves the probe itself can see the difference.
  WorkerProcess open(compile_worker(true, false));
  WorkerReply o = open.call({{"type", "test_sandbox"}}, 30);
  ASSERT_TRUE(o.ok) << o.error_message;
  EXPECT_NE(o.body["probe"].get<std::string>().find("fork: ALLOWED"), std::string::npos) << o.body["probe"];
}

TEST(WorkerProcess, AMissingExecutableIsAWorkerCrashWithTheReason) {
  WorkerSpawn s = compile_worker();
  s.executable = "/nonexistent/kforge-worker";
  WorkerProcess w(s);
  WorkerReply r = w.call({{"type", "test_sleep"}}, 5);
  EXPECT_EQ(r.error_kind, "worker_crashed");
  EXPECT_NE(r.error_message.find("could not start"), std::string::npos) << r.error_message;
}

TEST(WorkerProcess, StartsFromAProcessWithOnlyTheStandardFilesOpen) {
  // The pipe ends then take the very numbers the worker reads (3 and 4): the case kforge's CLI hits.
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    for (int fd = 3; fd < 1024; ++fd) close(fd);
    WorkerProcess w(compile_worker());
    WorkerReply r = w.call({{"type", "test_sleep"}, {"seconds", 0.01}}, 30);
    _exit(r.ok ? 0 : 1);
  }
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
}

TEST(WorkerProcess, LaunchedWorkersStartTogetherAndReportTheirStartUp) {
  // Two workers launched at once, each awaited on first use: their starts overlap, and each
  // start is broken down from the caller's and the worker's own timestamps (one monotonic clock).
  WorkerProcess a(compile_worker()), b(compile_worker());
  EXPECT_TRUE(a.startup_report().is_null());
  ASSERT_TRUE(a.launch());
  ASSERT_TRUE(b.launch());
  EXPECT_TRUE(a.running());
  EXPECT_TRUE(b.running());
  EXPECT_EQ(a.starts(), 1);
  EXPECT_TRUE(a.launch()) << "a running worker is left alone";
  EXPECT_EQ(a.starts(), 1);
  WorkerReply r = b.call(compile_request(), 60);
  ASSERT_TRUE(r.ok) << r.error_message;
  EXPECT_EQ(a.hello()["mode"], "compile");
  EXPECT_LT(b.start_times().spawn_ns, a.start_times().hello_ns) << "b was launched before a answered";
  for (WorkerProcess* w : {&a, &b}) {
    Json s = w->startup_report();
    ASSERT_TRUE(s.is_object()) << s;
    for (const char* k : {"spawn_to_preinit_ms", "static_init_ms", "spawn_to_main_ms", "init_ms", "spawn_to_ready_ms", "hello_wait_ms",
                          "spawn_to_hello_ms"}) {
      ASSERT_TRUE(s.contains(k) && s[k].is_number()) << k << " in " << s;
      EXPECT_GE(s[k].get<double>(), 0.0) << k << " in " << s;
    }
    EXPECT_LE(s["spawn_to_main_ms"].get<double>(), s["spawn_to_ready_ms"].get<double>());
    EXPECT_LE(s["spawn_to_ready_ms"].get<double>(), s["spawn_to_hello_ms"].get<double>() + 1e-3);
    EXPECT_TRUE(s["phases_ms"].contains("nvrtc_init")) << s;
    EXPECT_TRUE(s["phases_ms"].contains("warm_up")) << s;
    EXPECT_TRUE(w->last_hello()["warm_up"].get<bool>());
  }
  // Stopping both at once: each exits on its own.
  a.request_stop();
  b.request_stop();
  a.stop();
  b.stop();
  EXPECT_FALSE(a.running());
  EXPECT_FALSE(b.running());
}

TEST(WorkerProcess, AWorkerStillStartingIsKilledWhenStopped) {
  WorkerSpawn s = compile_worker();
  WorkerProcess w(s);
  ASSERT_TRUE(w.launch());
  pid_t pid = w.pid();
  auto t0 = std::chrono::steady_clock::now();
  w.stop();  // before its hello (its warm-up takes a second or more): not waited for
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1.0);
  EXPECT_FALSE(w.running());
  EXPECT_NE(kill(pid, 0), 0);
  // It starts again on the next call.
  EXPECT_TRUE(w.call({{"type", "test_sleep"}, {"seconds", 0.01}}, 60).ok);
  EXPECT_EQ(w.starts(), 2);
}

TEST(WorkerProcess, ACompileWorkerCanSkipItsWarmUp) {
  WorkerSpawn s = compile_worker();
  s.args.insert(s.args.end(), {"--warm-up", "0"});
  WorkerProcess w(s);
  EXPECT_FALSE(w.hello()["warm_up"].get<bool>());
  EXPECT_FALSE(w.hello().contains("warm_up_ms"));
  EXPECT_FALSE(w.startup_report()["phases_ms"].contains("warm_up"));
  WorkerReply r = w.call(compile_request(), 60);
  ASSERT_TRUE(r.ok) << r.error_message;
  EXPECT_TRUE(r.body["compile"]["ok"].get<bool>());
}
