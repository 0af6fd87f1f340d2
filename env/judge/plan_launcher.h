#pragma once
// A launch plan in the GPU worker (its wire form: plan_wire.h): checked against the task it is
// judged for, and launched: launch_plan() enqueues the plan's launches on one stream with the
// buffers of one call.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <cuda.h>

#include "data_synth/task/task_spec.h"
#include "env/launch/plan_wire.h"

namespace kforge {

// Throws a spec error for a buffer index outside the task's arguments, outputs or the plan's
// workspace, a launch_error CandidateError for more workspace than max_workspace_bytes.
void check_plan(const WirePlan& plan, const TaskSpec& task, int64_t max_workspace_bytes);

// The device addresses one call's launches take.
struct CallBuffers {
  std::vector<CUdeviceptr> arguments, outputs, workspace;
  std::vector<int64_t> workspace_bytes;
};

// Enqueues the plan on `stream`: zeroes the workspace buffers marked zero, then every launch in
// order. A failed launch is a launch_error (fatal when the context is lost).
void launch_plan(const WirePlan& plan, const std::map<std::string, CUfunction>& funcs, const CallBuffers& b, CUstream stream);

}  // namespace kforge
