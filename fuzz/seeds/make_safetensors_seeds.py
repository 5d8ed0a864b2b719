# SPDX-License-Identifier: MIT
"""Writes small safetensors seeds for the fuzzers with the real safetensors library.

    tests/tools/modern-python fuzz/seeds/make_safetensors_seeds.py

Debian 12 has no python3-safetensors, so the modern-torch root runs this; the files (a few hundred
bytes each) are committed, so the fuzz build does not need that root. They cover every dtype torch
can write, 0-dim, empty and multi-dimensional tensors, shared-name prefixes and metadata, and names that need JSON escapes.
"""
import os

import torch
from safetensors.torch import save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'safetensors')


def write(name, tensors, metadata=None):
    save_file(tensors, os.path.join(OUT, name + '.safetensors'), metadata=metadata)


def main():
    os.makedirs(OUT, exist_ok=True)
    torch.manual_seed(0)
    write('state_dict', {
        'encoder.layers.0.weight': torch.randn(4, 3),
        'encoder.layers.0.bias': torch.zeros(4),
        'decoder.weight': torch.randn(2, 4),
    }, metadata={'format': 'pt'})
    dtypes = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
              torch.bfloat16, torch.float32, torch.float64, torch.complex64,
              torch.float8_e4m3fn, torch.float8_e5m2, torch.uint16, torch.uint32, torch.uint64]
    write('dtypes', {str(dtype).replace('torch.', ''): torch.ones(2, dtype=dtype) for dtype in dtypes})
    write('shapes', {
        'scalar': torch.tensor(3.5),
        'empty': torch.zeros(0, 5),
        'cube': torch.arange(24, dtype=torch.int32).reshape(2, 3, 4),
    })
    write('metadata_only', {'x': torch.ones(1)}, metadata={'step': '100', 'note': 'caf\u00e9 \u2603'})
    write('single_byte', {'b': torch.tensor([7], dtype=torch.uint8)})
    # The reader's header scan takes plain names and ASCII metadata; escaped and non-ASCII names, and
    # names the dotted-path split stops at, go to the JSON parser (issue 28): both paths seeded.
    write('names', {
        'plain.module.weight': torch.ones(2),
        'quote"name': torch.ones(1),
        'back\\slash': torch.ones(1),
        'tab\tname': torch.ones(1),
        'caf\u00e9.weight': torch.ones(1),
        'a..b': torch.ones(1),
        '.lead': torch.ones(1),
        'trail.': torch.ones(1),
    }, metadata={'format': 'pt', 'step': '7'})
    write('ascii_names', {'model.layers.0.w': torch.ones(2, 2), 'model.layers.0.b': torch.zeros(2),
                          'model.layers.1.w': torch.ones(2, 2)}, metadata={'format': 'pt', 'step': '7'})


if __name__ == '__main__':
    main()
