#pragma once
// The extension kind in the GPU worker (issue 28; env/extension/EXTENSION_FORMAT.md): the
// candidate's shared library, loaded from the request's bytes through an anonymous memory file
// (nothing is written to disk), and its plan (extension_plan.h) run through the functions the
// library registered (plan_runner.h). Every call goes through CallBench like a kernel-kind call:
// the task's arguments are the drawn buffers of the call's buffer set (as tensors over exactly
// their bytes, on the harness stream, which is torch's current stream), and what forward returns
// is copied into the set's output buffers, where the harness compares it. That copy is inside a
// timed call's region (a cost of output bytes over the device's copy rate, against the candidate).
#include <cstdint>
#include <vector>

#include <kforge_ext.h>

#include "data_synth/task/task_spec.h"
#include "env/extension/extension_library.h"
#include "env/extension/extension_plan.h"
#include "env/judge/candidate_program.h"

namespace kforge {

// Loads the request's library (extension_library.h) and registers its code as the candidate's
// (launch_origin.h); what does not load is a launch_error CandidateError, and a library that starts
// threads when loaded is a fatal one (they would run on in the worker).
LoadedExtension load_candidate_library(const std::vector<uint8_t>& library);

class ExtensionProgram final : public CandidateProgram {
 public:
  // `input_layout`: GpuExtension::input_layout (the inputs' memory layout forward is given).
  ExtensionProgram(const TaskSpec& task, const LoadedExtension& lib, ExtensionPlan plan, std::string input_layout = "contiguous");
  const std::vector<WireWorkspace>& workspace() const override { return no_workspace_; }
  // Runs the plan, its CUDA API calls attributed to the candidate's host code (CandidateScope).
  // forward's results must be the task's outputs (count, shape, dtype, on the device), else a
  // runtime_error naming the output. An exception inside a call is the call's runtime_error with
  // model_new.py's line.
  void run(const CallView& view, CUstream stream) override;
  // The memory of every tensor the call returned is overwritten (0xFF bytes: NaN in floating
  // point) before it goes back to torch's caching allocator: an output left uninitialised in a
  // later call cannot be handed this call's answer.
  // Also counts the threads left running since before_call (host_threads).
  void retire(CUstream stream) override;
  void before_call() override;
  HostThreads host_threads() const override { return threads_; }
  int64_t launches_per_call() const override { return -1; }
  const ExtensionPlan& plan() const { return plan_; }

 private:
  const TaskSpec& task_;
  LoadedExtension lib_;
  ExtensionPlan plan_;
  std::vector<WireWorkspace> no_workspace_;
  std::string input_layout_;
  std::vector<at::Tensor> relaid_;                     // the last call's inputs in another layout (harness copies)
  std::vector<at::Tensor> held_;                       // the last call's results, until retire()
  std::vector<std::pair<uintptr_t, uintptr_t>> args_;  // the last call's argument ranges (never poisoned)
  int threads_before_ = -1;                            // the process's threads at before_call, until counted again
  HostThreads threads_;
  void count_threads();
  void poison_held(CUstream stream);
};

}  // namespace kforge
