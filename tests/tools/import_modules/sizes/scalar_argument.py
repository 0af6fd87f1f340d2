# expect: load_error
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, k):
        return x * k


def get_inputs():
    return [torch.randn(4), 3]


def get_init_inputs():
    return []
