// kforge-worker: runs kernel candidates on one GPU (CUDA context, modules and references kept
// warm between requests). Started and supervised by env/process/worker_client.h; it never outlives its
// parent. Compiling happens in kforge-compile-worker.
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "configs/error.h"
#include "env/judge/gpu_worker.h"
#include "env/process/sandbox.h"
#include "env/process/worker_loop.h"

using namespace kforge;

int main(int argc, char** argv) {
  StartupClock startup;
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
    // GpuWorker creates the device's context while NVRTC builds its harness kernels on another
    // thread; its hello's "start_ms" splits the two.
    gpu = std::make_unique<GpuWorker>(args.device);
    startup.mark("gpu_worker_init");
    hello = gpu->hello();
    if (args.seccomp) install_worker_seccomp();
    startup.mark("seccomp");
    hello["seccomp"] = args.seccomp;
    hello["startup"] = startup.json();
  } catch (const std::exception& e) {
    hello = error_reply(worker_error::internal, std::string("GPU worker start failed: ") + e.what());
    startup.mark("failed");
    hello["startup"] = startup.json();
  }
  int rc = serve_worker(args, hello, [&](const Json& req) {
    if (req.value("type", "") != "evaluate")
      return error_reply(worker_error::bad_request, "unknown request type '" + req.value("type", "") + "' for a GPU worker");
    return gpu->evaluate(req);
  });
  // Nothing of the worker outlives it (no files): skip the destructors (modules, tensors,
  // libtorch's and CUPTI's static state) and leave the context to the driver's process exit, so
  // that the caller waiting for the exit waits for less.
  std::fflush(nullptr);
  std::_Exit(rc);
}
