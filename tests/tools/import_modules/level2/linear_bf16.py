import torch
import torch.nn as nn


class Model(nn.Module):
    """A bfloat16 linear layer followed by tanh."""

    def __init__(self, n):
        super().__init__()
        self.fc = nn.Linear(n, n).to(torch.bfloat16)

    def forward(self, x):
        return torch.tanh(self.fc(x))


def get_inputs():
    return [torch.randn(4, 32, dtype=torch.bfloat16)]


def get_init_inputs():
    return [32]
