#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes resources/demo/demo-checkpoint.pt with real torch: the classic "will not load on my
laptop" file for the desktop app's first start and for teaching. A small transformer-like model
(embedding tied to the output head, two blocks), its Adam state after one step, and storages
recorded on cuda:0, cuda:1 and cpu, as a two-GPU training run would have left them. This machine
has no GPU, so the tags are given by a tagger registered with torch.serialization.register_package
(the same mechanism torch uses for its own backends); the bytes are the real tensors.

    /usr/bin/python3 resources/demo/make_demo_checkpoint.py
"""
import os

import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.attn = nn.ModuleDict({"q_proj": nn.Linear(width, width), "k_proj": nn.Linear(width, width),
                                   "v_proj": nn.Linear(width, width), "o_proj": nn.Linear(width, width)})
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))


class TinyTransformer(nn.Module):
    def __init__(self, vocab=512, width=64, blocks=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.layers = nn.ModuleList(Block(width) for _ in range(blocks))
        self.final_norm = nn.LayerNorm(width)
        self.lm_head = nn.Linear(width, vocab, bias=False)
        self.lm_head.weight = self.embed.weight  # tied: one storage, two names


def main():
    torch.manual_seed(2026)
    model = TinyTransformer()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-4)
    loss = sum(p.float().pow(2).sum() for p in model.parameters())
    loss.backward()
    optimizer.step()

    # Pipeline-parallel placement of the run that "saved" this file: embedding and block 0 on
    # cuda:0, block 1 and the head on cuda:1, and the optimizer's step counters on cpu.
    tags = {}
    def place(tensor, tag):
        tags[tensor.untyped_storage().data_ptr() if hasattr(tensor, "untyped_storage") else tensor.storage().data_ptr()] = tag

    state = model.state_dict()
    for name, tensor in state.items():
        place(tensor, "cuda:1" if name.startswith(("layers.1.", "final_norm.")) else "cuda:0")
    names = {id(p): n for n, p in model.named_parameters()}
    for index, group_param in enumerate(model.parameters()):
        param_state = optimizer.state[group_param]
        device = "cuda:1" if names[id(group_param)].startswith(("layers.1.", "final_norm.")) else "cuda:0"
        for key, value in param_state.items():
            place(value, "cpu" if key == "step" else device)

    def tagger(storage):
        pointer = storage.data_ptr()
        return tags.get(pointer)

    def deserializer(storage, location):
        return None

    torch.serialization.register_package(0, tagger, deserializer)
    checkpoint = {"model": state, "optimizer": optimizer.state_dict(), "epoch": 12, "global_step": 48000,
                  "config": {"vocab": 512, "width": 64, "blocks": 2, "lr": 3e-4, "device": "cuda:0"}}
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "demo-checkpoint.pt")
    torch.save(checkpoint, out)

    # Self-check with torch: every storage carries the tag planned for it.
    seen = {}
    def record(storage, location):
        seen.setdefault(location, 0)
        seen[location] += 1
        return storage
    torch.load(out, map_location=record)
    assert set(seen) == {"cuda:0", "cuda:1", "cpu"}, seen
    print(out, os.path.getsize(out), "bytes;", "storages per tag:", seen)


if __name__ == "__main__":
    main()
