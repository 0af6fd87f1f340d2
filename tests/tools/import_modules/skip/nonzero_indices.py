# expect: data_dependent_shape
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.nonzero(x > 0)


def get_inputs():
    return [torch.randn(6, 6)]


def get_init_inputs():
    return []
