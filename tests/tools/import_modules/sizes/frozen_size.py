# float(x.shape[-1]) freezes the size the trace saw: a trace taken at a small size is wrong at every
# other, which the second small size shows. The module is then traced at its own size on the meta
# device (tier M), where the number frozen is its own dim.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.sum(dim=-1) / float(x.shape[-1])


batch_size = 64
dim = 1 << 24


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
