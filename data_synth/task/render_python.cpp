#include "data_synth/task/render_python.h"

#include <sstream>

namespace kforge {

std::string render_python(const TaskSpec& t) {
  if (t.imported()) return t.program;  // the module's own source, as the importer read it
  std::ostringstream py;
  py << "# kforge task " << t.id;
  if (!t.description.empty()) py << ": " << t.description;
  py << "\n# Generated from the task's operator graph; kforge's C++ reference computes the same function.\n";
  py << "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n";
  for (const auto& [name, value] : t.dims) py << name << " = " << value << "\n";
  py << "\n\nclass Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n";
  for (const auto& n : t.resolved.nodes) {
    if (!n.call.op->py_module) continue;
    py << "        self." << n.call.id << " = " << n.call.op->py_module(n.call);
    // The module's parameters take the dtype of its result (an embedding's input is int64).
    if (n.out.dtype != DType::float32) py << ".to(" << dtype_torch_name(n.out.dtype) << ")";
    py << "\n";
  }

  py << "\n    def forward(self";
  for (const auto& in : t.graph.inputs) py << ", " << in.name;
  py << "):\n";
  auto name_of = [&](const TensorRef& r) { return r.is_node ? t.resolved.nodes[r.index].call.id : t.graph.inputs[r.index].name; };
  for (const auto& n : t.resolved.nodes) {
    std::vector<std::string> args;
    for (const auto& r : n.inputs) args.push_back(name_of(r));
    py << "        " << n.call.id << " = " << n.call.op->py_expr(n.call, args, "self." + n.call.id) << "\n";
  }
  py << "        return ";
  for (size_t i = 0; i < t.resolved.outputs.size(); ++i) py << (i ? ", " : "") << name_of(t.resolved.outputs[i]);
  py << "\n\n\ndef get_inputs():\n";
  for (size_t i = 0; i < t.graph.inputs.size(); ++i) {
    const GraphInput& in = t.graph.inputs[i];
    std::string shape;
    for (const auto& d : in.shape) shape += (shape.empty() ? "" : ", ") + d.python();
    py << "    " << in.name << " = " << t.arguments[i].draw.python(shape, in.dtype) << "\n";
  }
  py << "    return [";
  for (size_t i = 0; i < t.graph.inputs.size(); ++i) py << (i ? ", " : "") << t.graph.inputs[i].name;
  py << "]\n\n\ndef get_init_inputs():\n    return []\n";
  return py.str();
}

}  // namespace kforge
