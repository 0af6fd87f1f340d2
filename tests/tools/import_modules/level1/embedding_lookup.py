import torch
import torch.nn as nn

VOCAB, DIM = 50, 16


class Model(nn.Module):
    """Embedding lookup of integer token ids."""

    def __init__(self):
        super().__init__()
        self.table = nn.Embedding(VOCAB, DIM)

    def forward(self, ids):
        return self.table(ids)


def get_inputs():
    return [torch.randint(0, VOCAB, (4, 12))]


def get_init_inputs():
    return []
