#pragma once
// The reference of an imported task: its module exported as TorchScript (TASK_FORMAT.md,
// "Imported tasks"), loaded once per artifact and device and called with the argument tensors.
// The only translation unit that includes torch/script.h is reference_torchscript.cpp.
#include <cstdint>
#include <vector>

#include <ATen/ATen.h>

#include "data_synth/task/task_spec.h"

namespace kforge {

// Calls the task's TorchScript module on `args` (the task's argument order, all on one device)
// and returns the tuple's tensors in `outputs` order. A wrong number of outputs, or an output of
// another shape (or dtype, where the arguments have their declared dtypes) than the task states, is a
// spec error naming the output; an artifact that does not load is a spec error; a failing forward a
// runtime error.
std::vector<at::Tensor> run_torchscript_reference(const TaskSpec& task, const std::vector<at::Tensor>& args);

// How many artifacts have been loaded (torch::jit::load) by this process: each (sha256, device) once.
int64_t torchscript_loads();

}  // namespace kforge
