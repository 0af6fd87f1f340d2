import torch
import torch.nn as nn


class Model(nn.Module):
    """A one-layer LSTM over a short sequence; the last hidden state through a linear layer."""

    def __init__(self, inp, hidden, out):
        super().__init__()
        self.lstm = nn.LSTM(inp, hidden, batch_first=True)
        self.fc = nn.Linear(hidden, out)

    def forward(self, x):
        seq, (h, c) = self.lstm(x)
        return self.fc(seq[:, -1]), h


def get_inputs():
    return [torch.randn(3, 5, 8)]


def get_init_inputs():
    return [8, 12, 4]
