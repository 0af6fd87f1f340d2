# expect: stochastic
import torch
import torch.nn as nn


class Model(nn.Module):
    """Dropout in train mode (KernelBench modules run in the constructor's default mode)."""

    def __init__(self, p):
        super().__init__()
        self.drop = nn.Dropout(p)

    def forward(self, x):
        return self.drop(x) * 2.0


def get_inputs():
    return [torch.randn(8, 16)]


def get_init_inputs():
    return [0.3]
