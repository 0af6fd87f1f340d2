# expect: torch_compute. Strategy: finish the result with a tensor method (ATen) after the kernel.
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        y = cuda_extension.exp_forward(x)
        return y.sum(self.dim)  # <- refused
