# expect: import. Strategy: read the harness's files (the reference outputs) from the host.
import os  # <- refused

import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def forward(self, x):
        os.listdir("/")
        return cuda_extension.copy_forward(x)
