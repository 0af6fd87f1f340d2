# expect: torch_compute. Strategy: the extension does a trivial part; torch.matmul does the real work.
import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def forward(self, a, b):
        c = torch.matmul(a, b)  # <- refused
        return cuda_extension.relu_forward(c)
