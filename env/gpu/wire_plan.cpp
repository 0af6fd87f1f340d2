#include "env/gpu/wire_plan.h"

#include "configs/error.h"
#include "env/gpu/candidate_error.h"
#include "env/gpu/cuda_driver.h"

namespace kforge {

WirePlan parse_plan(const Json& j, const TaskSpec& task, int64_t max_workspace_bytes) {
  WirePlan p;
  int64_t ws_bytes = 0;
  for (const auto& w : j.at("workspace")) {
    WireWorkspace ws{w.at("name").get<std::string>(), dtype_from_name(w.at("dtype").get<std::string>()),
                     w.at("elements").get<int64_t>(), w.at("zero").get<bool>()};
    KFORGE_CHECK(ws.elements >= 1, spec, "workspace " << ws.name << " has no elements");
    ws_bytes += ws.elements * static_cast<int64_t>(dtype_size(ws.dtype));
    p.workspace.push_back(ws);
  }
  if (ws_bytes > max_workspace_bytes)
    throw CandidateError(worker_error::launch_error,
                         "the workspace needs " + std::to_string(ws_bytes) + " bytes, over the limit of " +
                             std::to_string(max_workspace_bytes),
                         false);
  static const std::map<std::string, WireArg::Kind> kinds = {
      {"argument", WireArg::argument}, {"output", WireArg::output}, {"workspace", WireArg::workspace},
      {"i32", WireArg::i32}, {"u32", WireArg::u32}, {"i64", WireArg::i64}, {"u64", WireArg::u64},
      {"f32", WireArg::f32}, {"f64", WireArg::f64}};
  for (const auto& l : j.at("launches")) {
    WireLaunch wl;
    wl.kernel = l.at("kernel").get<std::string>();
    wl.where = l.value("where", "");
    for (int d = 0; d < 3; ++d) {
      wl.grid[d] = l.at("grid").at(d).get<uint32_t>();
      wl.block[d] = l.at("block").at(d).get<uint32_t>();
      KFORGE_CHECK(wl.grid[d] >= 1 && wl.block[d] >= 1, spec, "launch of " << wl.kernel << " has an empty grid or block");
    }
    wl.smem = l.at("shared_mem").get<uint32_t>();
    for (const auto& a : l.at("args")) {
      auto it = kinds.find(a.at("kind").get<std::string>());
      KFORGE_CHECK(it != kinds.end(), spec, "unknown argument kind " << a.at("kind"));
      WireArg w{it->second};
      size_t limit = 0;
      switch (w.kind) {
        case WireArg::argument: limit = task.arguments.size(); break;
        case WireArg::output: limit = task.outputs.size(); break;
        case WireArg::workspace: limit = p.workspace.size(); break;
        case WireArg::f32:
        case WireArg::f64: w.f = a.at("value").get<double>(); break;
        default: w.i = a.at("value").get<int64_t>(); break;
      }
      if (w.kind == WireArg::argument || w.kind == WireArg::output || w.kind == WireArg::workspace) {
        w.index = a.at("index").get<int>();
        KFORGE_CHECK(w.index >= 0 && static_cast<size_t>(w.index) < limit, spec, "buffer index " << w.index << " out of range");
      }
      wl.args.push_back(w);
    }
    p.launches.push_back(std::move(wl));
  }
  KFORGE_CHECK(!p.launches.empty(), spec, "the plan has no launches");
  return p;
}

void launch_plan(const WirePlan& plan, const std::map<std::string, CUfunction>& funcs, const CallBuffers& b, CUstream st) {
  for (size_t w = 0; w < plan.workspace.size(); ++w)
    if (plan.workspace[w].zero) KFORGE_CU(cuda_driver().MemsetD8Async(b.workspace[w], 0, b.workspace_bytes[w], st));
  for (const auto& l : plan.launches) {
    std::vector<uint64_t> values(l.args.size(), 0);
    std::vector<void*> params(l.args.size());
    for (size_t i = 0; i < l.args.size(); ++i) {
      const WireArg& a = l.args[i];
      void* slot = &values[i];
      switch (a.kind) {
        case WireArg::argument: values[i] = b.arguments[a.index]; break;
        case WireArg::output: values[i] = b.outputs[a.index]; break;
        case WireArg::workspace: values[i] = b.workspace[a.index]; break;
        case WireArg::i32: *static_cast<int32_t*>(slot) = static_cast<int32_t>(a.i); break;
        case WireArg::u32: *static_cast<uint32_t*>(slot) = static_cast<uint32_t>(a.i); break;
        case WireArg::i64: *static_cast<int64_t*>(slot) = a.i; break;
        case WireArg::u64: *static_cast<uint64_t*>(slot) = static_cast<uint64_t>(a.i); break;
        case WireArg::f32: *static_cast<float*>(slot) = static_cast<float>(a.f); break;
        case WireArg::f64: *static_cast<double*>(slot) = a.f; break;
      }
      params[i] = slot;
    }
    CUresult r = cuda_driver().LaunchKernel(funcs.at(l.kernel), l.grid[0], l.grid[1], l.grid[2], l.block[0], l.block[1], l.block[2],
                                            l.smem, st, params.data(), nullptr);
    if (r != CUDA_SUCCESS) fail_cu(r, l.where + ": launching " + l.kernel, worker_error::launch_error);
  }
}

}  // namespace kforge
