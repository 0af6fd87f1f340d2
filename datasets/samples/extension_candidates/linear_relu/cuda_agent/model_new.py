import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    """relu(fc(x)) through the extension: the parameters are the task's (fc.weight, fc.bias)."""

    def __init__(self, in_features: int = 4096, out_features: int = 4096) -> None:
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.linear_relu_forward(x, self.fc.weight, self.fc.bias)
