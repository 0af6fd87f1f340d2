# torch.utils.cpp_extension.load over the candidate's own files: softmax(x * weight) along the last dimension.
import torch
import torch.nn as nn
from torch.utils import cpp_extension

softmax_ext = cpp_extension.load(
    name="scaled_softmax_ext",
    sources=["scaled_softmax.cu", "scaled_softmax_bind.cpp"],
    extra_cuda_cflags=["-O3"],
    verbose=True,
)


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(features))

    def forward(self, x):
        return softmax_ext.scaled_softmax(x, self.weight, dim=-1)
