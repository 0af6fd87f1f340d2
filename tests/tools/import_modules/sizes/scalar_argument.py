# get_inputs() returns Python scalars beside the tensor: they are passed to the reference as constants.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, k, s, flip):
        y = x * k + s
        return -y if flip else y


def get_inputs():
    return [torch.randn(4, 8), 3, 0.5, True]


def get_init_inputs():
    return []
