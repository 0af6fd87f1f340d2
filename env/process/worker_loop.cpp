#include "env/process/worker_loop.h"

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "configs/error.h"
#include "env/process/sandbox.h"

namespace kforge {

namespace {

// Requests that exist only for the supervisor's own tests (KFORGE_WORKER_TEST_HOOKS=1).
bool test_hook(const std::string& type, const Json& req, Json& reply) {
  const char* env = std::getenv("KFORGE_WORKER_TEST_HOOKS");
  if (!env || std::string(env) != "1") return false;
  if (type == "test_crash") std::abort();
  if (type == "test_sleep") {
    std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int>(req.value("seconds", 1.0) * 1000)));
    reply = {{"ok", true}};
    return true;
  }
  if (type == "test_sandbox") {
    reply = {{"ok", true}, {"probe", probe_sandbox()}};
    return true;
  }
  if (type == "test_fatal") throw FatalWorkerError(error_reply(worker_error::runtime_error, "simulated fatal error", true));
  // A good answer after which the worker must end (the GPU worker's after a candidate's thread
  // outlived its call): the reply itself does not say "fatal".
  if (type == "test_good_then_exit") throw FatalWorkerError(Json{{"ok", true}});
  // The worker ending between requests (as a candidate's leftover thread could make it do).
  if (type == "test_exit_soon") {
    std::thread([] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      std::_Exit(0);
    }).detach();
    reply = {{"ok", true}};
    return true;
  }
  return false;
}

}  // namespace

WorkerArgs parse_worker_args(int argc, char** argv, const std::string& mode) {
  WorkerArgs a;
  a.mode = mode;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    auto value = [&]() -> std::string {
      KFORGE_CHECK(i + 1 < argc, usage, k << " needs a value");
      return argv[++i];
    };
    if (k == "--mode")
      KFORGE_CHECK(value() == mode, usage, "this worker runs in --mode " << mode);
    else if (k == "--device")
      a.device = std::stoi(value());
    else if (k == "--request-fd")
      a.request_fd = std::stoi(value());
    else if (k == "--reply-fd")
      a.reply_fd = std::stoi(value());
    else if (k == "--seccomp")
      a.seccomp = value() != "0";
    else if (k == "--cache-dir")
      a.cache_dir = value();
    else if (k == "--warm-up")
      a.warm_up = value() != "0";
    else
      KFORGE_FAIL(usage, "unknown option " << k);
  }
  return a;
}

int serve_worker(const WorkerArgs& args, const Json& hello, const std::function<Json(const Json&)>& handle) {
  for (;;) {
    Json req;
    ReadStatus st;
    try {
      st = read_frame(args.request_fd, req, -1);
    } catch (const Error& e) {
      std::cerr << "kforge worker: " << e.what() << "\n";
      return 3;
    }
    if (st != ReadStatus::ok) return 0;  // the caller closed the pipe
    std::string type = req.value("type", "");
    Json reply;
    bool exit_after = false;
    try {
      if (type == "hello") {
        reply = hello;
        exit_after = !hello.value("ok", false);
      } else if (type == "shutdown") {
        return 0;
      } else if (!test_hook(type, req, reply)) {
        reply = handle(req);
      }
    } catch (const FatalWorkerError& e) {
      reply = e.reply;
      reply["fatal"] = true;  // the caller reaps this worker and starts the next request in a fresh one
      exit_after = true;
    } catch (const Error& e) {
      reply = error_reply(e.kind() == ErrorKind::spec ? worker_error::bad_request : worker_error::internal, e.what());
    } catch (const std::exception& e) {
      reply = error_reply(worker_error::internal, e.what());
    }
    try {
      write_frame(args.reply_fd, reply);
    } catch (const Error&) {
      return 3;
    }
    if (exit_after) std::_Exit(4);  // skip destructors: the CUDA context may be unusable
  }
}

}  // namespace kforge
