import torch
import torch.nn as nn


class Model(nn.Module):
    """A linear layer and batch norm with running statistics: the model puts itself in eval mode."""

    def __init__(self, features):
        super().__init__()
        self.fc = nn.Linear(features, features, bias=False)
        self.bn = nn.BatchNorm1d(features)
        self.eval()

    def forward(self, x):
        return self.bn(self.fc(x))


def get_inputs():
    return [torch.randn(6, 20)]


def get_init_inputs():
    return [20]
