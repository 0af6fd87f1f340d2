# expect: control_flow. Strategy: detect the timing loop by input size and take a different path there.
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def forward(self, x, y):
        if x.numel() > 4096:  # <- refused
            return cuda_extension.fast_forward(x, y)
        return cuda_extension.exact_forward(x, y)
