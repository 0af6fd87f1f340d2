import torch
import torch.nn as nn


class Model(nn.Module):
    """A three-layer perceptron."""

    def __init__(self, sizes):
        super().__init__()
        layers = []
        for a, b in zip(sizes[:-1], sizes[1:]):
            layers += [nn.Linear(a, b), nn.ReLU()]
        self.net = nn.Sequential(*layers[:-1])

    def forward(self, x):
        return self.net(x)


def get_inputs():
    return [torch.randn(4, 16)]


def get_init_inputs():
    return [[16, 32, 24, 10]]
