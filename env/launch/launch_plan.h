#pragma once
// A kernel candidate's launch plan (`launch.yaml`, documented for the policy in
// env/launch/KERNEL_FORMAT.md): workspace buffers, an ordered list of launches and compiler options.
// Reading checks the syntax and schema; resolving checks the plan against the task and the
// kernels' signatures and turns every expression into a number. Every mistake is a spec error
// that starts with where it is: "launch.yaml:7:5: launches[1].args[2]: ...".
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "data_synth/task/dim_expr.h"
#include "data_synth/task/dtype.h"
#include "data_synth/task/task_spec.h"
#include "env/launch/kernel_signature.h"

namespace kforge {

// The `where` strings below are "origin:line:col: key.path", ready to prefix a message.

struct PlanArg {
  enum Kind { name_or_expr, number } kind = name_or_expr;
  std::string text;  // as written: "x", "fc.weight", "ceil_div(N, 256)", "1e-5"
  double value = 0;  // kind == number
  std::string where;
};

struct PlanLaunch {
  std::string kernel;
  std::vector<DimExpr> grid, block;  // 1 to 3 entries each (x, y, z)
  DimExpr shared_mem;                // bytes; 0 when not given
  std::vector<PlanArg> args;
  std::string where;  // the launch: "launch.yaml:7:5: launches[1]"
  std::string kernel_where, args_where, shared_mem_where;
  std::vector<std::string> grid_where, block_where;  // one per entry
};

struct PlanWorkspace {
  std::string name;
  DType dtype = DType::float32;
  DimExpr size;  // elements
  bool zero = false;
  std::string where, name_where, size_where;
};

struct PlanOptions {
  bool use_fast_math = false;
  int maxrregcount = 0;  // 0: the compiler's choice; else 1..255
};

// A plan is a few lines; these caps keep a hostile one from costing more than a refusal. Every
// expression also has DimExpr's caps (4096 characters, 64 levels of nesting, 256 operators).
constexpr size_t kMaxPlanBytes = 256 * 1024;  // the workspace's default max_file_bytes
constexpr int kMaxPlanDepth = 16;             // YAML nesting; a plan needs 5

struct LaunchPlan {
  std::vector<PlanWorkspace> workspace;
  std::vector<PlanLaunch> launches;
  PlanOptions options;

  // Syntax and schema only (strict keys, types, expression syntax, list lengths); names are
  // checked by resolve_plan. `origin` names the file in messages ("launch.yaml"). A text over
  // kMaxPlanBytes or nested deeper than kMaxPlanDepth, and a key written twice, are spec errors.
  static LaunchPlan parse(const std::string& yaml_text, const std::string& origin);
  static LaunchPlan load_file(const std::string& path);  // origin: the file's name
};

struct DeviceLimits {
  int max_threads_per_block = 1024;
  int max_block_dim[3] = {1024, 1024, 64};
  int64_t max_grid_dim[3] = {2147483647, 65535, 65535};
  int64_t max_dynamic_shared_bytes = 227 * 1024;  // an H100/H200 block's opt-in maximum
};

enum class BufferRole { input, parameter, output, workspace };

// index: into task.arguments for input and parameter (a task buffer such as bn.running_var is a
// parameter here), into task.outputs for output, into the plan's workspace for workspace.
struct BufferRef {
  BufferRole role = BufferRole::input;
  int index = 0;
  bool operator==(const BufferRef& o) const { return role == o.role && index == o.index; }
};

struct ResolvedArg {
  enum Kind { buffer, i32, u32, i64, u64, f32, f64 } kind = buffer;
  BufferRef ref;  // kind == buffer (not named `buffer`: that is the enumerator)
  int64_t i = 0;  // integer kinds, within the parameter type's range
  double f = 0;   // f32 (representable as a float) and f64
};

struct ResolvedLaunch {
  std::string kernel;
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  uint32_t shared_mem = 0;
  std::vector<ResolvedArg> args;  // one per kernel parameter
  std::string where;
};

struct ResolvedWorkspace {
  std::string name;
  DType dtype = DType::float32;
  int64_t elements = 0;
  bool zero = false;
};

struct ResolvedPlan {
  std::vector<ResolvedWorkspace> workspace;
  std::vector<ResolvedLaunch> launches;
  PlanOptions options;
};

// Checks everything against the task (its dims, argument and output names and dtypes) and the
// kernels' signatures, and evaluates every expression over task.dims. In args a tensor name
// (argument, output, workspace) is looked up first, then a number, then an integer expression.
ResolvedPlan resolve_plan(const LaunchPlan& plan, const TaskSpec& task, const std::vector<KernelSignature>& kernels,
                          const DeviceLimits& limits = {});

// The task dims the plan's expressions name (grids, blocks, shared memory, workspace sizes and
// integer arguments): a plan naming none is written for one shape and follows no other.
std::set<std::string> plan_dim_names(const LaunchPlan& plan, const DimEnv& dims);

}  // namespace kforge
