# Rows of a softmax at a batch and a width get_inputs() alone reads (tier A: 16 GiB at its own
# size, checked and traced at a small one): its other shapes (issue 30) are an odd batch and width,
# and a batch of one, each checked against eager by the importer.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=1) * 2.0


batch_size = 65536
dim = 65536


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
