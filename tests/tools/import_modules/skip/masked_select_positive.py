# expect: data_dependent_shape
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, threshold):
        return torch.masked_select(x, x > threshold)


def get_inputs():
    return [torch.randn(40), torch.randn(40)]


def get_init_inputs():
    return []
