# expect: M
# A gated scan over chunks of the sequence, its gate a parameter of the batch's and the sequence's
# size. forward reads the sizes as Python numbers (as einops' rearrange does): the trace keeps them,
# so a trace at a small size computes another function at any other size. Traced on the meta
# device at the module's own size, it holds there.
import torch
import torch.nn as nn


class Model(nn.Module):
    """Gated cumulative sums within chunks of the sequence, plus the totals of the chunks before."""

    def __init__(self, batch, length, width):
        super().__init__()
        self.gate = nn.Parameter(torch.randn(batch, length, width))

    def forward(self, x):
        b, n, d = (int(s) for s in x.shape)
        y = (x * torch.sigmoid(self.gate)).reshape(b, n // chunk, chunk, d).cumsum(2)
        totals = y[:, :, -1:]
        return (y + torch.cumsum(totals, dim=1) - totals).reshape(b, n, d)


batch_size = 256  # 384 MiB of arguments and output: above what the CPU checks run at
length = 2048
width = 64
chunk = 8


def get_inputs():
    return [torch.randn(batch_size, length, width)]


def get_init_inputs():
    return [batch_size, length, width]
