#pragma once
// A task's reference in C++: its arguments drawn as tensors (CPU or CUDA) and its op graph
// executed with libtorch, or, for an imported task, its TorchScript module (reference_torchscript.h).
#include <map>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "data_synth/task/task_spec.h"

namespace kforge {

at::ScalarType to_scalar_type(DType t);

// One argument of one trial: drawn on the CPU (counter-based, see draw.h), then copied to `device`,
// so CPU and CUDA runs see identical bytes.
at::Tensor draw_tensor(const Draw& draw, const TensorMeta& meta, uint64_t stream, const at::Device& device);
// Every argument of trial `key.trial`, in the task's argument order.
std::vector<at::Tensor> draw_arguments(const TaskSpec& task, const DrawKey& key, const at::Device& device);

// Runs the task's graph (or TorchScript module) on `args` (its argument order) and returns its outputs.
std::vector<at::Tensor> run_reference(const TaskSpec& task, const std::vector<at::Tensor>& args);

// The precision settings every float32 reference and baseline runs with: TF32 off for cuBLAS and
// cuDNN, float32 matmul precision "highest". Returns the flags as recorded with baselines.
std::map<std::string, std::string> apply_reference_precision();

}  // namespace kforge
