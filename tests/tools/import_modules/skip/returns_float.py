# expect: non_tensor_output
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return float(x.abs().mean())


def get_inputs():
    return [torch.randn(10)]


def get_init_inputs():
    return []
