#pragma once
// A launch plan as it crosses from the evaluator to the GPU worker, inside the GPU request
// (gpu_request.h): resolve_plan()'s output (env/launch/launch_plan.h) with every buffer named by its
// index and every scalar evaluated. to_json() and parse_wire_plan() are the plan's wire form, both
// here and nowhere else; parse_wire_plan() reads every key by name and type and refuses an unknown
// one. What a plan may ask of a task (buffer indices in range, the workspace limit) is checked by
// the GPU worker against the task it judges (plan_launcher.h, check_plan).
#include <cstdint>
#include <string>
#include <vector>

#include "data_synth/task/dtype.h"
#include "env/process/worker_protocol.h"

namespace kforge {

struct WireArg {
  enum Kind { argument, output, workspace, i32, u32, i64, u64, f32, f64 } kind = argument;
  int index = 0;  // argument, output, workspace
  int64_t i = 0;  // i32, u32, i64, u64
  double f = 0;   // f32, f64
  bool is_buffer() const { return kind == argument || kind == output || kind == workspace; }
};
struct WireLaunch {
  std::string kernel, where;  // where: "launch.yaml:LINE", for the errors that name a launch
  uint32_t grid[3] = {1, 1, 1}, block[3] = {1, 1, 1}, smem = 0;
  std::vector<WireArg> args;
};
struct WireWorkspace {
  std::string name;
  DType dtype = DType::float32;
  int64_t elements = 0;
  bool zero = false;
};
struct WirePlan {
  std::vector<WireWorkspace> workspace;
  std::vector<WireLaunch> launches;
};

Json to_json(const WirePlan& p);
// Throws a spec error naming the path of the first unknown, missing or mistyped key, an unknown
// argument kind, an empty grid or block, a workspace buffer without elements, or a plan without launches.
WirePlan parse_wire_plan(const Json& j, const std::string& path);

struct ResolvedPlan;  // launch_plan.h
// resolve_plan()'s output in the form the GPU worker takes: buffers by role and index.
WirePlan wire_plan_of(const ResolvedPlan& plan);

}  // namespace kforge
