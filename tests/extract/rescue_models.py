# SPDX-License-Identifier: MIT
"""Model classes for the extract fixtures. The fixtures pickle these classes whole, so loading them
needs this module: the checker runs where it cannot be imported, as a user without the code would."""
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.linear = nn.Linear(dim, dim)
        self.norm = nn.BatchNorm1d(dim)  # buffers, num_batches_tracked (int64)
        # Not in state_dict(): a non-persistent buffer and a plain tensor attribute.
        self.register_buffer("cache", torch.full((dim,), 7.0), persistent=False)
        self.scratch = torch.zeros(3)


class RescueNet(nn.Module):
    def __init__(self, vocab=10, dim=4):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.blocks = nn.ModuleList([Block(dim), Block(dim)])
        self.shared = self.blocks[0]  # one submodule under two names: state_dict lists both
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.embed.weight  # tied
        self.register_buffer("positions", torch.arange(6).view(2, 3).t())  # non-contiguous buffer
