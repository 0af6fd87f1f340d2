# expect: unsupported_dtype
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.exp()


def get_inputs():
    return [torch.randn(8, dtype=torch.float64)]


def get_init_inputs():
    return []
