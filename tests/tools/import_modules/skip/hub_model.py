# expect: needs_network
import torch
from transformers import AutoModel


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.model = AutoModel.from_pretrained("bert-base-uncased")

    def forward(self, x):
        return self.model(x).last_hidden_state


def get_inputs():
    return [torch.randint(0, 1000, (1, 16))]


def get_init_inputs():
    return []
