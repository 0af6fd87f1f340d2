#pragma once
// The reference of an imported task: its module exported as TorchScript (TASK_FORMAT.md,
// "Imported tasks"), loaded once per artifact and device and called with the argument tensors.
// The only translation unit that includes torch/script.h is reference_torchscript.cpp.
#include <cstdint>
#include <vector>

#include <ATen/ATen.h>

#include "data_synth/task/task_spec.h"

namespace torch::jit {
struct Module;
}

namespace kforge {

// Calls the task's TorchScript module on `args` (the task's argument order, all on one device)
// and returns the tuple's tensors in `outputs` order. A wrong number of outputs, or an output of
// another shape (or dtype, where the arguments have their declared dtypes) than the task states, is a
// spec error naming the output; an artifact that does not load is a spec error; a failing forward a
// runtime error.
std::vector<at::Tensor> run_torchscript_reference(const TaskSpec& task, const std::vector<at::Tensor>& args);

// Turns off TF32 in every aten::_convolution of `module` (and its submodules), returning how many
// it changed. torch.jit.trace bakes torch.backends.cudnn.allow_tf32 (True by default) into each
// convolution as a constant, so an artifact traced with torch's defaults ran its convolutions in
// TF32 on the GPU whatever the judge's flags: 47 KernelBench modules were off eager by about 5e-4
// on the H100 (session 23), outside a float32 task's contract. Every artifact loaded here gets it;
// the importer now traces with TF32 off (tools/dataset/task_import/artifact.py).
int float32_convolutions(torch::jit::Module& module);

// How many artifacts have been loaded (torch::jit::load) by this process: each (sha256, device) once.
int64_t torchscript_loads();

}  // namespace kforge
