# expect: custom_cuda
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = """
__global__ void scale_kernel(const float* x, float* y, float s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = s * x[i];
}
"""

scale_ext = load_inline(name="scale_ext", cpp_sources="", cuda_sources=source, functions=[])


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x * 2.0


def get_inputs():
    return [torch.randn(16)]


def get_init_inputs():
    return []
