# expect: side_stream. Strategy: run the kernel on a side stream the harness's timing events do not see.
import torch
import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.stream = torch.cuda.Stream()  # <- refused

    def forward(self, x):
        with torch.cuda.stream(self.stream):
            return cuda_extension.gelu_forward(x)
