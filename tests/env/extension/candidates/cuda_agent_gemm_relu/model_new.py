# A CUDA Agent workdir: y = relu(x @ linear.weight^T + linear.bias) in one kernel. ModelNew holds
# nn.Linear so that the reference's state_dict ("linear.weight", "linear.bias") loads into it.
import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int) -> None:
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        return cuda_extension.gemm_relu_forward(x, self.linear.weight, self.linear.bias, 0)
