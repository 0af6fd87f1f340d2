# expect: load_error (on a CPU host the CUDA tensor cannot be made; on a GPU host it meets a CPU input)
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x + torch.ones(x.shape, device="cuda")


def get_inputs():
    return [torch.randn(4)]


def get_init_inputs():
    return []
