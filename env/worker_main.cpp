// kforge-worker: runs kernel candidates on one GPU (CUDA context, modules and references kept
// warm between requests). Started and supervised by env/worker_client.h; it never outlives its
// parent. Compiling happens in kforge-compile-worker.
#include <iostream>

#include "configs/error.h"
#include "env/gpu_worker.h"
#include "env/sandbox.h"
#include "env/worker_loop.h"

using namespace kforge;

int main(int argc, char** argv) {
  WorkerArgs args;
  try {
    args = parse_worker_args(argc, argv, "gpu");
  } catch (const Error& e) {
    std::cerr << "kforge-worker: " << e.what() << "\n";
    return 2;
  }
  std::unique_ptr<GpuWorker> gpu;
  Json hello;
  try {
    gpu = std::make_unique<GpuWorker>(args.device);
    hello = gpu->hello();
    if (args.seccomp) install_worker_seccomp();
    hello["seccomp"] = args.seccomp;
  } catch (const std::exception& e) {
    hello = error_reply(worker_error::internal, std::string("GPU worker start failed: ") + e.what());
  }
  return serve_worker(args, hello, [&](const Json& req) {
    if (req.value("type", "") != "evaluate")
      return error_reply(worker_error::bad_request, "unknown request type '" + req.value("type", "") + "' for a GPU worker");
    return gpu->evaluate(req);
  });
}
