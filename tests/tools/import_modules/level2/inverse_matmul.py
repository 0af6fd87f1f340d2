import torch
import torch.nn as nn


class Model(nn.Module):
    """Solves with a well-conditioned matrix: an op the flop counter has no formula for."""

    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        m = a + 8.0 * torch.eye(a.shape[-1], device=a.device, dtype=a.dtype)
        return torch.linalg.inv(m) @ b


def get_inputs():
    return [torch.rand(6, 6), torch.randn(6, 3)]


def get_init_inputs():
    return []
