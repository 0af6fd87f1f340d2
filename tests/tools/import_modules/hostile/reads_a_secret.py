# expect: load_error
# Reads a file only its owner may read (the test makes secret.txt beside it, mode 0600) and would
# bake its bytes into the artifact as a constant of forward.
import os

import torch

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "secret.txt"), "rb") as f:
    SECRET = torch.tensor(list(f.read()), dtype=torch.float32)


class Model(torch.nn.Module):
    def forward(self, x):
        return x + SECRET.sum()


def get_inputs():
    return [torch.randn(4, 4)]


def get_init_inputs():
    return []
