#!/usr/bin/env python3
"""Writes a 40-block, 16 GiB transformer-shaped state_dict with real torch, without its data:
torch.serialization.skip_data() (torch 2.6+) writes the archive with every record at its full
size but leaves the bytes as holes, so the file is sparse and takes almost no disk.
usage: make_forty_blocks.py OUT.pt"""
import sys

import torch

width, hidden, vocab, blocks = 4096, 11008, 32000, 40
state = {}
embed = torch.empty(vocab, width, dtype=torch.float16)
state["model.embed_tokens.weight"] = embed
for i in range(blocks):
    prefix = f"model.layers.{i}."
    for name in ("q_proj", "k_proj", "v_proj", "o_proj"):
        state[prefix + f"self_attn.{name}.weight"] = torch.empty(width, width, dtype=torch.float16)
    state[prefix + "mlp.gate_proj.weight"] = torch.empty(hidden, width, dtype=torch.float16)
    state[prefix + "mlp.up_proj.weight"] = torch.empty(hidden, width, dtype=torch.float16)
    state[prefix + "mlp.down_proj.weight"] = torch.empty(width, hidden, dtype=torch.float16)
    state[prefix + "input_layernorm.weight"] = torch.empty(width, dtype=torch.float16)
    state[prefix + "post_attention_layernorm.weight"] = torch.empty(width, dtype=torch.float16)
state["model.norm.weight"] = torch.empty(width, dtype=torch.float16)
state["lm_head.weight"] = embed  # tied to the embedding: one storage, two names
with torch.serialization.skip_data():
    torch.save(state, sys.argv[1])
print(sys.argv[1], sum(t.numel() * t.element_size() for k, t in state.items() if k != "lm_head.weight"), "bytes of storages")
