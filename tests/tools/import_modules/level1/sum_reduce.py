import torch
import torch.nn as nn


class Model(nn.Module):
    """Sum over one dimension, kept."""

    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.sum(x, dim=self.dim, keepdim=True)


def get_inputs():
    return [torch.randn(8, 32, 5)]


def get_init_inputs():
    return [1]
