# expect: M
# A recurrent cell that keeps its state as a plain tensor of the batch's size (not a parameter or
# buffer), which forward overwrites with the given state before reading it: the trace keeps that
# tensor, so a trace at a small size fails at any other; traced on the meta device at its own size,
# the tensor becomes zeros made on the arguments' device (its values are never read).
import torch
import torch.nn as nn


class Model(nn.Module):
    """One step of a tanh cell over a state kept as a plain tensor."""

    def __init__(self, features):
        super().__init__()
        self.state = torch.randn(batch_size, features)
        self.cell = nn.Linear(2 * features, features)

    def forward(self, x, h0):
        self.state.copy_(h0)
        return torch.tanh(self.cell(torch.cat([x, self.state], dim=1)))


batch_size = 65536  # 4.3 GFLOP per forward: above what the CPU checks run at
features = 128


def get_inputs():
    return [torch.randn(batch_size, features), torch.randn(batch_size, features)]


def get_init_inputs():
    return [features]
