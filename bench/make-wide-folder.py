# SPDX-License-Identifier: MIT
"""Writes a folder shaped like a large real model: DeepSeek-V3's layout (61 decoder layers, the
first 3 dense, 58 mixture-of-experts layers of 256 routed experts and one shared expert, the
multi-token-prediction layer 61, FP8 weights with their float32 block scales), 160 safetensors
shards and model.safetensors.index.json, about 92,000 tensors: the names, dtypes, tensor count and
shard count of the real checkpoint.

Every shard is written by the real safetensors library (safetensors.torch.save_file, torch 2.x of
the sid root: run through tests/tools/modern-python). Every dimension is the real one divided by
SCALE (default 32, rounded up; the FP8 block scales follow the scaled weights) so the library
writes about 0.7 GB in under a minute rather than 700 GB; then the tensor bytes of each shard are
punched out (fallocate --punch-hole, by the caller: bench/run-wide-folder-benchmark.sh) so the
folder takes a few MiB on disk. Opening the folder reads only the headers: what is measured is
the header count and size, which the scaling changes only in the digits of each offset.

    tests/tools/modern-python bench/make-wide-folder.py OUT_DIR [SCALE]
"""
import json
import math
import os
import sys

import torch
from safetensors.torch import save_file

out = sys.argv[1]
scale = int(sys.argv[2]) if len(sys.argv) > 2 else 32
os.makedirs(out, exist_ok=True)

S = lambda n: max(1, math.ceil(n / scale))  # noqa: E731
hidden, vocab = S(7168), S(129280)
q_lora, kv_lora, rope, nope, v_head, heads = S(1536), S(512), S(64), S(128), S(128), 128
inter, moe_inter, experts = S(18432), S(2048), 256
fp8, bf16, f32 = torch.float8_e4m3fn, torch.bfloat16, torch.float32

tensors = []  # (name, shape, dtype) in the real checkpoint's order


def fp8_linear(name, rows, cols):
    tensors.append((name + ".weight", (rows, cols), fp8))
    tensors.append((name + ".weight_scale_inv", (math.ceil(rows / 128), math.ceil(cols / 128)), f32))


def mlp(prefix, rows):
    fp8_linear(prefix + ".gate_proj", rows, hidden)
    fp8_linear(prefix + ".up_proj", rows, hidden)
    fp8_linear(prefix + ".down_proj", hidden, rows)


def layer(i):
    p = f"model.layers.{i}"
    tensors.append((p + ".input_layernorm.weight", (hidden,), bf16))
    fp8_linear(p + ".self_attn.q_a_proj", q_lora, hidden)
    tensors.append((p + ".self_attn.q_a_layernorm.weight", (q_lora,), bf16))
    fp8_linear(p + ".self_attn.q_b_proj", heads * (nope + rope), q_lora)
    fp8_linear(p + ".self_attn.kv_a_proj_with_mqa", kv_lora + rope, hidden)
    tensors.append((p + ".self_attn.kv_a_layernorm.weight", (kv_lora,), bf16))
    fp8_linear(p + ".self_attn.kv_b_proj", heads * (nope + v_head), kv_lora)
    fp8_linear(p + ".self_attn.o_proj", hidden, heads * v_head)
    tensors.append((p + ".post_attention_layernorm.weight", (hidden,), bf16))
    if i < 3:
        mlp(p + ".mlp", inter)
        return
    tensors.append((p + ".mlp.gate.weight", (experts, hidden), bf16))
    tensors.append((p + ".mlp.gate.e_score_correction_bias", (experts,), f32))
    for e in range(experts):
        mlp(f"{p}.mlp.experts.{e}", moe_inter)
    mlp(p + ".mlp.shared_experts", moe_inter)


tensors.append(("model.embed_tokens.weight", (vocab, hidden), bf16))
for i in range(61):
    layer(i)
layer(61)  # the multi-token-prediction layer, with its own embedding, norms and head
tensors += [
    ("model.layers.61.embed_tokens.weight", (vocab, hidden), bf16),
    ("model.layers.61.enorm.weight", (hidden,), bf16),
    ("model.layers.61.hnorm.weight", (hidden,), bf16),
    ("model.layers.61.eh_proj.weight", (hidden, 2 * hidden), bf16),
    ("model.layers.61.shared_head.norm.weight", (hidden,), bf16),
    ("model.layers.61.shared_head.head.weight", (vocab, hidden), bf16),
    ("model.norm.weight", (hidden,), bf16),
    ("lm_head.weight", (vocab, hidden), bf16),
]

shards = 160
nbytes = lambda shape, dtype: math.prod(shape) * torch.empty((), dtype=dtype).element_size()  # noqa: E731
total = sum(nbytes(s, d) for _, s, d in tensors)
target = total / shards
groups, current, size = [], [], 0
for entry in tensors:
    current.append(entry)
    size += nbytes(entry[1], entry[2])
    if size >= target and len(groups) < shards - 1:
        groups.append(current)
        current, size = [], 0
groups.append(current)
while len(groups) < shards:  # never fewer files than the real folder
    biggest = max(range(len(groups)), key=lambda g: len(groups[g]))
    half = len(groups[biggest]) // 2
    groups[biggest:biggest + 1] = [groups[biggest][:half], groups[biggest][half:]]

weight_map = {}
for n, group in enumerate(groups, start=1):
    name = f"model-{n:05d}-of-{len(groups):05d}.safetensors"
    save_file({t: torch.zeros(shape, dtype=dtype) for t, shape, dtype in group}, os.path.join(out, name),
              metadata={"format": "pt"})
    for t, _, _ in group:
        weight_map[t] = name
with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
    f.write(json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}, indent=2, sort_keys=True) + "\n")
print(f"wrote {out}: {len(groups)} shards, {len(tensors)} tensors, {total / 2**30:.2f} GiB of tensor bytes "
      f"(dimensions / {scale}), safetensors {__import__('safetensors').__version__}, torch {torch.__version__}")
