# expect: too_large (the suite runs with --max-bytes 4000000)
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x + 1


def get_inputs():
    return [torch.randn(1024, 1024)]


def get_init_inputs():
    return []
