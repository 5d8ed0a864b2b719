# SPDX-License-Identifier: MIT
"""Classes a whole pickled model names by reference: nothing here runs at unpickling time beyond
what nn.Module's own state restore does."""
import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.linear = nn.Linear(width, width)
        self.norm = nn.LayerNorm(width)

    def forward(self, x):
        return self.norm(torch.relu(self.linear(x)))


class GpuNet(nn.Module):
    """Two blocks, a head, a BatchNorm (int64 and float buffers) and a plain tensor attribute."""

    def __init__(self, width=6, classes=3):
        super().__init__()
        self.blocks = nn.Sequential(Block(width), Block(width))
        self.bn = nn.BatchNorm1d(width)
        self.head = nn.Linear(width, classes)
        self.register_buffer("scale", torch.tensor(0.5))
        self.prototypes = torch.arange(12, dtype=torch.float32).view(3, 4)  # not a buffer

    def forward(self, x):
        return self.head(self.bn(self.blocks(x))) * self.scale


class ScaledTensor(torch.Tensor):
    """A user's tensor subclass: torch.save pickles it by reference (_rebuild_from_type_v2 naming
    gpunets.blocks.ScaledTensor), so a file holding one cannot be verified either."""
