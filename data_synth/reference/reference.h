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

// What a graph run keeps of its intermediate values: every one until the end (the timed reference,
// measured so since the baselines were), or each only until its last use (the conditioning's
// float64 runs, draw_family.h, whose peak is then the largest live set rather than the sum of every
// node's output; a view keeps its base alive either way). TorchScript references run as their module does.
enum class Intermediates { keep, free_after_last_use };

// Runs the task's graph (or TorchScript module) on `args` (its argument order) and returns its outputs.
std::vector<at::Tensor> run_reference(const TaskSpec& task, const std::vector<at::Tensor>& args,
                                      Intermediates intermediates = Intermediates::keep);

// For each node of `g`, the index of the last node that reads its output, or g.nodes.size() where
// the output is one of the graph's outputs (kept to the end), or the node's own index where nothing
// reads it.
std::vector<size_t> last_uses(const ResolvedGraph& g);

// The precision settings every float32 reference and baseline runs with: TF32 off for cuBLAS and
// cuDNN, float32 matmul precision "highest". Returns the flags as recorded with baselines.
std::map<std::string, std::string> apply_reference_precision();

}  // namespace kforge
