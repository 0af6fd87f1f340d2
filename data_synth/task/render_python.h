#pragma once
// Renders a task as the PyTorch program the policy reads, in the KernelBench / CUDA-Agent format:
// `class Model(nn.Module)` with the operators as modules and a forward, `get_inputs()` and
// `get_init_inputs()`. The consistency test runs this program with pip torch and checks it
// against the C++ reference on the same arguments. An imported task's program is its module's
// source, returned verbatim.
#include <string>

#include "data_synth/task/task_spec.h"

namespace kforge {

std::string render_python(const TaskSpec& task);

}  // namespace kforge
