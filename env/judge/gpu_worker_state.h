#pragma once
// What a GPU worker keeps between requests: its device and context, the harness's own kernels
// (draws, checks), loaded candidate modules, parsed tasks, each task's robustness conditions, the
// device's measured ceilings, and the one source of call identities.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <cuda.h>

#include "anticheat/dynamic_checks.h"
#include "data_synth/reference/draw_family.h"
#include "data_synth/task/task_spec.h"
#include "env/judge/call_bench.h"
#include "env/judge/check_kernel.h"
#include "env/judge/draw_kernel.h"
#include "env/judge/extension_program.h"
#include "env/judge/gpu_request.h"
#include "env/judge/gpu_worker.h"
#include "env/judge/timing.h"

namespace kforge {

struct GpuWorker::State {
  int device = 0;
  at::Device dev{at::kCUDA, 0};
  CUcontext ctx = nullptr;
  Json info;
  Json start_ms;  // the worker's start, split (context, harness kernels)
  std::string arch;
  std::unique_ptr<DeviceDrawer> drawer;
  std::unique_ptr<DeviceChecker> checker;
  CallIds ids;                              // every draw seed, poison, key and slot choice
  std::map<std::string, CUmodule> modules;  // by cubin hash
  // By library hash. A library cannot be unloaded safely (torch's registrations, its static
  // destructors), so a worker that holds kMaxExtensionLibraries ends after its reply and the
  // supervisor starts a fresh one for the next request (gpu_worker.cpp).
  std::map<std::string, LoadedExtension> extensions;
  static constexpr size_t kMaxExtensionLibraries = 32;
  bool extensions_full() const { return extensions.size() >= kMaxExtensionLibraries; }
  std::map<std::string, TaskSpec> tasks;             // by spec text
  std::map<std::string, TaskConditions> conditions;  // by spec text and margin
  TaskConditions unmeasured;                         // the last conditions the harness could not measure (not kept)
  int64_t max_optin_smem = 0;
  std::unique_ptr<L2Flush> l2_flush;  // verification calls are flushed as timed ones are

  CUstream stream() const;
  // The request's task, parsed once per task_key (its text and GpuEvalRequest::extra_shape).
  const TaskSpec& task_for(const GpuEvalRequest& req);
  // Which robustness variants are well-conditioned for the task (robust_draws.h), measured once
  // per task and margin in this worker.
  const TaskConditions& conditions_for(const TaskSpec& task, const std::string& yaml, double margin);
  // Writes factor x the L2 size and resets persisting lines: time_interleaved's flush (timing.h).
  void flush_l2(double factor);
  // The device's ceilings for the speed-of-light check, measured on first use.
  const DeviceCeilings& ceilings();
  BenchDevice bench_device() const { return {dev, stream(), drawer.get(), checker.get()}; }

 private:
  DeviceCeilings ceilings_;
};

}  // namespace kforge
