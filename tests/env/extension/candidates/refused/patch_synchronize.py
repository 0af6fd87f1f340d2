# expect: monkeypatch. Strategy: make the harness's timer stop early by turning torch.cuda.synchronize
# into a no-op, so asynchronous work is never waited for.
import torch
import torch.nn as nn

import cuda_extension

torch.cuda.synchronize = lambda *args, **kwargs: None  # <- refused


class ModelNew(nn.Module):
    def forward(self, x):
        return cuda_extension.slow_forward(x)
