# expect: trace_mismatch
import torch
import torch.nn as nn


class Model(nn.Module):
    """Control flow on the values: the trace keeps the branch its example took."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        if x.max() > 50:
            return x * 2
        return x - 1


def get_inputs():
    x = torch.randn(64)
    x[0] = 100.0
    return [x]


def get_init_inputs():
    return []
