#pragma once
// What one candidate call runs, for either kind (../shared/DESIGN.md, Candidates): the kernel kind's
// launch plan on its NVRTC module (plan_launcher.h), or the extension kind's plan through the
// functions its shared library registered (extension_program.h). CallBench owns everything around
// the call (draws, buffer sets, guards, fingerprints, the reference, the comparison) and is the same
// for both: a candidate cannot tell which kind of harness call it is in, and neither kind gets a
// check the other skips, except where a kind has nothing to check (an extension declares no
// workspace and no launch count).
#include <cstdint>
#include <vector>

#include <ATen/ATen.h>
#include <cuda.h>

#include "env/judge/plan_launcher.h"
#include "env/launch/plan_wire.h"

namespace kforge {

// One call's buffers, as device addresses (kernel kind) and as tensors over exactly those bytes
// (extension kind): the task's arguments, its outputs and the candidate's workspace.
struct CallView {
  const CallBuffers& buffers;
  const std::vector<at::Tensor>& arguments;
  const std::vector<at::Tensor>& outputs;
};

// Threads of the candidate's host code still running after its calls (extension kind): how many
// calls left any, and the most left after one call.
struct HostThreads {
  int64_t calls = 0;
  int64_t most = 0;
};

class CandidateProgram {
 public:
  virtual ~CandidateProgram() = default;
  // The workspace buffers a call needs besides the task's (the kernel kind's plan declares them).
  virtual const std::vector<WireWorkspace>& workspace() const = 0;
  // Enqueues one call on `stream`, leaving the task's outputs in view.outputs. Everything it does
  // is inside the timed region of a timed call.
  virtual void run(const CallView& view, CUstream stream) = 0;
  // After the call, outside the timed region: what the candidate allocated for the call is
  // poisoned and released (extension kind). Stream-ordered on `stream`.
  virtual void retire(CUstream stream) { (void)stream; }
  // Before the call, outside the timed region (the extension kind counts the process's threads).
  virtual void before_call() {}
  // Threads the candidate's host code left running after its calls, since the program was made.
  virtual HostThreads host_threads() const { return {}; }
  // Kernel launches per call, when the candidate states them (kernel_activity checks the count);
  // -1 when it does not (an extension launches what its host code decides).
  virtual int64_t launches_per_call() const = 0;
};

// The kernel kind: a checked launch plan on the module's functions.
class PlanProgram final : public CandidateProgram {
 public:
  PlanProgram(const WirePlan& plan, const std::map<std::string, CUfunction>& funcs) : plan_(plan), funcs_(funcs) {}
  const std::vector<WireWorkspace>& workspace() const override { return plan_.workspace; }
  void run(const CallView& view, CUstream stream) override { launch_plan(plan_, funcs_, view.buffers, stream); }
  int64_t launches_per_call() const override { return static_cast<int64_t>(plan_.launches.size()); }

 private:
  const WirePlan& plan_;
  const std::map<std::string, CUfunction>& funcs_;
};

}  // namespace kforge
