#include "data_synth/reference/reference.h"

#include <c10/core/InferenceMode.h>
#include "configs/error.h"

#include "data_synth/reference/op_exec.h"
#include "data_synth/reference/reference_torchscript.h"

namespace kforge {

at::ScalarType to_scalar_type(DType t) {
  switch (t) {
    case DType::float32:
      return at::kFloat;
    case DType::float16:
      return at::kHalf;
    case DType::bfloat16:
      return at::kBFloat16;
    case DType::int32:
      return at::kInt;
    case DType::int64:
      return at::kLong;
    case DType::boolean:
      return at::kBool;
  }
  return at::kFloat;
}

at::Tensor draw_tensor(const Draw& draw, const TensorMeta& meta, uint64_t stream, const at::Device& device) {
  at::Tensor cpu = at::empty(meta.shape, at::TensorOptions().dtype(to_scalar_type(meta.dtype)).pinned_memory(device.is_cuda()));
  fill_draw(draw, meta.dtype, stream, cpu.numel(), cpu.data_ptr());
  return device.is_cpu() ? cpu : cpu.to(device);
}

std::vector<at::Tensor> draw_arguments(const TaskSpec& task, const DrawKey& key, const at::Device& device) {
  std::vector<at::Tensor> args;
  for (size_t i = 0; i < task.arguments.size(); ++i) {
    const TaskArgument& a = task.arguments[i];
    args.push_back(draw_tensor(a.draw, a.decl.meta, draw_stream(key, i), device));
  }
  return args;
}

std::vector<size_t> last_uses(const ResolvedGraph& g) {
  std::vector<size_t> last(g.nodes.size());
  for (size_t ni = 0; ni < g.nodes.size(); ++ni) {
    last[ni] = ni;
    for (const auto& r : g.nodes[ni].inputs)
      if (r.is_node) last[static_cast<size_t>(r.index)] = ni;
  }
  for (const auto& r : g.outputs)
    if (r.is_node) last[static_cast<size_t>(r.index)] = g.nodes.size();
  return last;
}

std::vector<at::Tensor> run_reference(const TaskSpec& task, const std::vector<at::Tensor>& args, Intermediates intermediates) {
  if (task.imported()) return run_torchscript_reference(task, args);
  const ResolvedGraph& g = task.resolved;
  KFORGE_CHECK(args.size() == g.arguments.size(), internal,
               "task " << task.id << " takes " << g.arguments.size() << " arguments, got " << args.size());
  c10::InferenceMode inference_mode;  // what eager PyTorch under torch.inference_mode() does
  std::vector<at::Tensor> values(g.nodes.size());
  const std::vector<size_t> last =
      intermediates == Intermediates::free_after_last_use ? last_uses(g) : std::vector<size_t>(g.nodes.size(), g.nodes.size());
  for (size_t ni = 0; ni < g.nodes.size(); ++ni) {
    const ResolvedNode& n = g.nodes[ni];
    std::vector<at::Tensor> in, params;
    for (const auto& r : n.inputs) in.push_back(r.is_node ? values[r.index] : args[r.index]);
    for (int p : n.params) params.push_back(args[p]);
    try {
      values[ni] = execute_op(n.call, in, params);
    } catch (const c10::Error& e) {
      KFORGE_FAIL(runtime, "task " << task.id << ", node '" << n.call.id << "' (" << n.call.op->name
                                   << "): libtorch failed: " << e.what_without_backtrace());
    }
    in.clear();
    for (const auto& r : n.inputs)  // values this node read for the last time
      if (r.is_node && last[static_cast<size_t>(r.index)] == ni) values[static_cast<size_t>(r.index)].reset();
    if (last[ni] == ni) values[ni].reset();  // read by nothing
  }
  std::vector<at::Tensor> out;
  for (const auto& r : g.outputs) out.push_back(values[r.index]);
  return out;
}

std::map<std::string, std::string> apply_reference_precision() {
  auto& ctx = at::globalContext();
  ctx.setAllowTF32CuBLAS(false);
  ctx.setAllowTF32CuDNN(false);
  ctx.setFloat32MatmulPrecision("highest");
  return {{"allow_tf32_cublas", ctx.allowTF32CuBLAS() ? "true" : "false"},
          {"allow_tf32_cudnn", ctx.allowTF32CuDNN() ? "true" : "false"},
          {"float32_matmul_precision", "highest"}};
}

}  // namespace kforge
