#pragma once
// How each registered operator executes in libtorch. The calls are the ATen functions the rendered
// PyTorch program reaches (torch.relu -> at::relu, nn.Linear -> at::linear, ...), so the two agree
// bit for bit on the CPU.
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "data_synth/task/op_registry.h"

namespace kforge {

// Throws an unsupported error for an operator without an executor.
at::Tensor execute_op(const OpCall& call, const std::vector<at::Tensor>& inputs, const std::vector<at::Tensor>& params);
bool has_executor(const std::string& op);

}  // namespace kforge
