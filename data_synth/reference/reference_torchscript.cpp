#include "data_synth/reference/reference_torchscript.h"

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>

#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/csrc/jit/runtime/graph_iterator.h>
#include <torch/script.h>

#include "configs/error.h"
#include "data_synth/reference/reference.h"

namespace kforge {

namespace {

std::atomic<int64_t> g_loads{0};

struct LoadedModule {
  std::mutex call;  // one forward at a time per module: the interpreter's state is per module
  torch::jit::Module module;
};

// Modules by (artifact sha256, device): a worker judges many candidates of one task, so the
// deserialisation (milliseconds to seconds for a large model) is paid once.
std::shared_ptr<LoadedModule> module_for(const TaskSpec& task, const at::Device& device) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<LoadedModule>> cache;
  const std::string key = task.reference.sha256 + "@" + device.str();
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  if (cache.size() >= 64) cache.clear();  // the worker's task cache has the same bound
  auto m = std::make_shared<LoadedModule>();
  try {
    std::istringstream in(task.reference.artifact);
    m->module = torch::jit::load(in, device);
  } catch (const std::exception& e) {
    KFORGE_FAIL(spec, "task " << task.id << ": the TorchScript artifact (sha256 " << task.reference.sha256.substr(0, 12)
                              << ") does not load on " << device.str() << ": " << e.what());
  }
  float32_convolutions(m->module);
  if (task.reference.module_mode == ModuleMode::train)
    m->module.train();
  else
    m->module.eval();
  ++g_loads;
  return cache.emplace(key, std::move(m)).first->second;
}

void check_outputs(const TaskSpec& task, const std::vector<at::Tensor>& args, const std::vector<at::Tensor>& out) {
  KFORGE_CHECK(out.size() == task.outputs.size(), spec,
               "task " << task.id << ": the TorchScript module returns " << out.size() << " tensor(s) but the task states "
                       << task.outputs.size() << " output(s)");
  // Promoted arguments (the robustness probe's float64 copy) give promoted outputs.
  bool declared_dtypes = true;
  for (size_t i = 0; i < args.size(); ++i)
    declared_dtypes = declared_dtypes && args[i].scalar_type() == to_scalar_type(task.arguments[i].decl.meta.dtype);
  for (size_t i = 0; i < out.size(); ++i) {
    const TaskOutput& o = task.outputs[i];
    Shape got(out[i].sizes().begin(), out[i].sizes().end());
    KFORGE_CHECK(got == o.meta.shape, spec,
                 "task " << task.id << ": output " << i << " ('" << o.name << "') of the TorchScript module has shape " << shape_str(got)
                         << ", the task states " << shape_str(o.meta.shape));
    KFORGE_CHECK(!declared_dtypes || out[i].scalar_type() == to_scalar_type(o.meta.dtype), spec,
                 "task " << task.id << ": output " << i << " ('" << o.name << "') of the TorchScript module is "
                         << c10::toString(out[i].scalar_type()) << ", the task states " << dtype_name(o.meta.dtype));
  }
}

}  // namespace

int float32_convolutions(torch::jit::Module& module) {
  int cleared = 0;
  for (const torch::jit::Module& m : module.modules())
    for (const torch::jit::Method& method : m.get_methods()) {
      std::shared_ptr<torch::jit::Graph> graph = method.graph();
      for (torch::jit::DepthFirstGraphNodeIterator it(graph); torch::jit::Node* node = it.next();) {
        if (node->kind() != c10::Symbol::fromQualString("aten::_convolution") || node->inputs().empty()) continue;
        const size_t last = node->inputs().size() - 1;  // allow_tf32, the schema's last argument
        const std::optional<c10::IValue> v = torch::jit::toIValue(node->inputs()[last]);
        if (!v || !v->isBool() || !v->toBool()) continue;
        torch::jit::WithInsertPoint here(node);
        node->replaceInput(last, graph->insertConstant(false));
        ++cleared;
      }
    }
  return cleared;
}

std::vector<at::Tensor> run_torchscript_reference(const TaskSpec& task, const std::vector<at::Tensor>& args) {
  KFORGE_CHECK(task.imported(), internal, "task " << task.id << " has no TorchScript reference");
  KFORGE_CHECK(args.size() == task.arguments.size(), internal,
               "task " << task.id << " takes " << task.arguments.size() << " arguments, got " << args.size());
  const at::Device device = args.empty() ? at::Device(at::kCPU) : args.front().device();
  std::shared_ptr<LoadedModule> m = module_for(task, device);
  std::vector<torch::jit::IValue> inputs(args.begin(), args.end());
  torch::jit::IValue result;
  {
    std::lock_guard<std::mutex> lock(m->call);
    // No graph-executor optimisation: the traced ops run as eager would run them (no fusion that
    // could change rounding), and the first calls are not profiling runs.
    torch::jit::GraphOptimizerEnabledGuard no_optimise(false);
    c10::InferenceMode inference_mode;  // as the graph reference and eager under torch.inference_mode()
    try {
      result = m->module.forward(inputs);
    } catch (const std::exception& e) {
      KFORGE_FAIL(runtime, "task " << task.id << ": the TorchScript reference failed: " << e.what());
    }
  }
  std::vector<at::Tensor> out;
  if (result.isTuple()) {
    for (const auto& v : result.toTupleRef().elements()) {
      KFORGE_CHECK(v.isTensor(), spec,
                   "task " << task.id << ": the TorchScript module returns a " << v.tagKind() << " in its tuple, not a tensor");
      out.push_back(v.toTensor());
    }
  } else if (result.isTensor()) {
    out.push_back(result.toTensor());  // a one-output module traced without its tuple
  } else {
    KFORGE_FAIL(spec, "task " << task.id << ": the TorchScript module returns a " << result.tagKind() << ", not a tuple of tensors");
  }
  check_outputs(task, args, out);
  return out;
}

int64_t torchscript_loads() { return g_loads.load(); }

}  // namespace kforge
