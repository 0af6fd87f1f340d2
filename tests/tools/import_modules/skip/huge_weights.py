# expect: too_large (never allocated: the importer sizes it on the meta device first)
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.fc = nn.Linear(n, n)

    def forward(self, x):
        return self.fc(x)


def get_inputs():
    return [torch.randn(8, 200000)]


def get_init_inputs():
    return [200000]
