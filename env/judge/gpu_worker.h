#pragma once
// The GPU side of judging a kernel candidate, run inside the GPU worker process (never in the
// caller): load its module, verify it against the task's reference over fresh trials, and time
// it interleaved with the reference. Requests are gpu_request.h's typed contract; every candidate
// call goes through call_bench.h; env/evaluator/EVAL_REPORT.md documents the reply's fields.
#include <map>
#include <memory>
#include <string>

#include "env/process/worker_protocol.h"

namespace kforge {

class GpuWorker {
 public:
  explicit GpuWorker(int device);
  ~GpuWorker();
  Json hello() const;
  // {"type": "evaluate", ...}: load, then verify, then (if asked and verified) time. Throws
  // FatalWorkerError (worker_loop.h) when the CUDA context is lost (illegal address, ...).
  Json evaluate(const Json& request);

  struct State;  // the device, its harness kernels, loaded modules and per-task caches

 private:
  std::unique_ptr<State> s_;
};

}  // namespace kforge
