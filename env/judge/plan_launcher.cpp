#include "env/judge/plan_launcher.h"

#include "configs/error.h"
#include "env/cuda/cuda_check.h"
#include "env/cuda/cuda_driver.h"
#include "env/judge/candidate_error.h"

namespace kforge {

void check_plan(const WirePlan& plan, const TaskSpec& task, int64_t max_workspace_bytes) {
  int64_t ws_bytes = 0;
  for (const auto& w : plan.workspace) ws_bytes += w.elements * static_cast<int64_t>(dtype_size(w.dtype));
  if (ws_bytes > max_workspace_bytes)
    throw CandidateError(
        worker_error::launch_error,
        "the workspace needs " + std::to_string(ws_bytes) + " bytes, over the limit of " + std::to_string(max_workspace_bytes), false);
  for (const auto& l : plan.launches)
    for (const auto& a : l.args) {
      if (!a.is_buffer()) continue;
      size_t limit = a.kind == WireArg::argument ? task.arguments.size()
                     : a.kind == WireArg::output ? task.outputs.size()
                                                 : plan.workspace.size();
      KFORGE_CHECK(a.index >= 0 && static_cast<size_t>(a.index) < limit, spec, "buffer index " << a.index << " out of range");
    }
}

void launch_plan(const WirePlan& plan, const std::map<std::string, CUfunction>& funcs, const CallBuffers& b, CUstream st) {
  for (size_t w = 0; w < plan.workspace.size(); ++w)
    if (plan.workspace[w].zero) KFORGE_CUDA(cuda_driver().MemsetD8Async(b.workspace[w], 0, b.workspace_bytes[w], st));
  for (const auto& l : plan.launches) {
    std::vector<uint64_t> values(l.args.size(), 0);
    std::vector<void*> params(l.args.size());
    for (size_t i = 0; i < l.args.size(); ++i) {
      const WireArg& a = l.args[i];
      void* slot = &values[i];
      switch (a.kind) {
        case WireArg::argument:
          values[i] = b.arguments[a.index];
          break;
        case WireArg::output:
          values[i] = b.outputs[a.index];
          break;
        case WireArg::workspace:
          values[i] = b.workspace[a.index];
          break;
        case WireArg::i32:
          *static_cast<int32_t*>(slot) = static_cast<int32_t>(a.i);
          break;
        case WireArg::u32:
          *static_cast<uint32_t*>(slot) = static_cast<uint32_t>(a.i);
          break;
        case WireArg::i64:
          *static_cast<int64_t*>(slot) = a.i;
          break;
        case WireArg::u64:
          *static_cast<uint64_t*>(slot) = static_cast<uint64_t>(a.i);
          break;
        case WireArg::f32:
          *static_cast<float*>(slot) = static_cast<float>(a.f);
          break;
        case WireArg::f64:
          *static_cast<double*>(slot) = a.f;
          break;
      }
      params[i] = slot;
    }
    CUresult r = cuda_driver().LaunchKernel(funcs.at(l.kernel), l.grid[0], l.grid[1], l.grid[2], l.block[0], l.block[1], l.block[2], l.smem,
                                            st, params.data(), nullptr);
    if (r != CUDA_SUCCESS) cuda_check(r, l.where + ": launching " + l.kernel, CudaBlame::candidate_launch);
  }
}

}  // namespace kforge
