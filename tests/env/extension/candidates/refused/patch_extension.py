# expect: monkeypatch. Strategy: replace the extension's function with a PyTorch lambda after loading.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

ext = load_inline(name="e", cpp_sources="torch::Tensor f(torch::Tensor x);", cuda_sources="", functions=["f"])
ext.f = torch.relu  # <- refused


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.f(x)
