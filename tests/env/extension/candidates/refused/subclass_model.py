# expect: reference_model. Strategy: inherit the reference's forward (a ModelNew subclass of a copy of
# Model), with the extension imported only for show.
import torch.nn as nn

import cuda_extension


class Model(nn.Module):
    def forward(self, x):
        return x.relu()


class ModelNew(Model):  # <- refused
    def __init__(self):
        super().__init__()
        self.ext = cuda_extension
