#pragma once
// A launch plan as the GPU worker receives it: resolve_plan()'s output (launch_plan.h) with every
// buffer named by its index and every scalar evaluated; launch() enqueues the plan's launches on
// one stream with the buffers of one call.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <cuda.h>

#include "data_synth/task/task_spec.h"
#include "env/process/worker_protocol.h"

namespace kforge {

struct WireArg {
  enum Kind { argument, output, workspace, i32, u32, i64, u64, f32, f64 } kind;
  int index = 0;
  int64_t i = 0;
  double f = 0;
};
struct WireLaunch {
  std::string kernel, where;
  uint32_t grid[3], block[3], smem;
  std::vector<WireArg> args;
};
struct WireWorkspace {
  std::string name;
  DType dtype;
  int64_t elements;
  bool zero;
};
struct WirePlan {
  std::vector<WireWorkspace> workspace;
  std::vector<WireLaunch> launches;
};

// Throws a spec error for a malformed plan, a launch_error CandidateError for too much workspace.
WirePlan parse_plan(const Json& j, const TaskSpec& task, int64_t max_workspace_bytes);

// The device addresses one call's launches take.
struct CallBuffers {
  std::vector<CUdeviceptr> arguments, outputs, workspace;
  std::vector<int64_t> workspace_bytes;
};

// Enqueues the plan on `stream`: zeroes the workspace buffers marked zero, then every launch in
// order. A failed launch is a launch_error (fatal when the context is lost).
void launch_plan(const WirePlan& plan, const std::map<std::string, CUfunction>& funcs, const CallBuffers& b, CUstream stream);

}  // namespace kforge
