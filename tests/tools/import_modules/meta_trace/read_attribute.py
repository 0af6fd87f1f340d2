# expect: trace_mismatch
# A fixed random offset kept as a plain tensor of the batch's size and read in forward: its values
# are a constant of the artifact. A trace at a small size keeps the small one (refuted at a second
# size), and on the meta device it has no values: it cannot be traced at the module's own size
# without computing it there, so it stays refused.
import torch
import torch.nn as nn


class Model(nn.Module):
    """A linear map plus an offset kept as a plain tensor."""

    def __init__(self, features):
        super().__init__()
        self.offset = torch.randn(batch_size, features)
        self.proj = nn.Linear(features, features)

    def forward(self, x):
        return self.proj(x) + self.offset


batch_size = 65536
features = 1024


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return [features]
