import torch
import torch.nn as nn

EMBED, HEADS, SEQ, BATCH = 16, 2, 6, 2


class Model(nn.Module):
    """A pre-norm transformer block: self-attention and an MLP, each with a residual."""

    def __init__(self, embed, heads):
        super().__init__()
        self.ln1 = nn.LayerNorm(embed)
        self.attn = nn.MultiheadAttention(embed, heads, dropout=0.0, batch_first=True)
        self.ln2 = nn.LayerNorm(embed)
        self.mlp = nn.Sequential(nn.Linear(embed, 4 * embed), nn.GELU(), nn.Linear(4 * embed, embed))

    def forward(self, x):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


def get_inputs():
    return [torch.randn(BATCH, SEQ, EMBED)]


def get_init_inputs():
    return [EMBED, HEADS]
