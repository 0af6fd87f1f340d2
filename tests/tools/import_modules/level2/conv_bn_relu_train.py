import torch
import torch.nn as nn


class Model(nn.Module):
    """Convolution, batch norm in train mode (batch statistics; running stats updated), ReLU."""

    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3)
        self.bn = nn.BatchNorm2d(cout)

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x)))


def get_inputs():
    return [torch.randn(4, 3, 9, 9)]


def get_init_inputs():
    return [3, 6]
