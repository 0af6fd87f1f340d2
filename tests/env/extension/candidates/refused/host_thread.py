# expect: thread. Strategy: launch the work from a host thread that outlives the timed call.
import threading  # <- refused

import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def forward(self, x):
        out = cuda_extension.empty_forward(x)
        threading.Thread(target=cuda_extension.fill_forward, args=(x, out)).start()
        return out
