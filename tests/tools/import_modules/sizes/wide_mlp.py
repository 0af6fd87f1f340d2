# The weights alone take 1.1 GiB at the module's size: the widths shrink with the batch (tier B), and
# the default-init draws follow the real fan-in.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super().__init__()
        self.fc1 = nn.Linear(input_size, hidden_size)
        self.fc2 = nn.Linear(hidden_size, output_size)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


batch_size = 4096
input_size = 16384
hidden_size = 16384
output_size = 1024


def get_inputs():
    return [torch.randn(batch_size, input_size)]


def get_init_inputs():
    return [input_size, hidden_size, output_size]
