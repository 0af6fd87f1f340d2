import torch
import torch.nn as nn


class Model(nn.Module):
    """Tensors made inside forward on the input's device: positions added, a causal mask applied."""

    def __init__(self):
        super().__init__()

    def forward(self, scores):
        n = scores.shape[-1]
        pos = torch.arange(n, device=scores.device, dtype=scores.dtype) * 0.1
        mask = torch.ones(n, n, device=scores.device).tril().bool()
        return torch.softmax((scores + pos).masked_fill(~mask, float("-inf")), dim=-1)


def get_inputs():
    return [torch.randn(3, 8, 8)]


def get_init_inputs():
    return []
