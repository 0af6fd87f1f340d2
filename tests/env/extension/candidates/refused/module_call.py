# expect: torch_compute. Strategy: keep nn.Linear and call it (cuBLAS through ATen) instead of a kernel.
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, i, o):
        super().__init__()
        self.fc = nn.Linear(i, o)

    def forward(self, x):
        return cuda_extension.relu_forward(self.fc(x))  # <- refused
