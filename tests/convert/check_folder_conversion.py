# SPDX-License-Identifier: MIT
"""Judges `ckpt-inspect convert DIR` with the real readers of each kind of folder.

usage: check_folder_conversion.py SOURCE_DIR CONVERTED

SOURCE_DIR is read by the library that wrote it: a folder of .bin shards with torch.load
(weights_only=True) of every shard its index lists, a folder of safetensors shards with
safetensors.torch.load_file, a torch.distributed.checkpoint folder with torch's own
dcp_to_torch_save (then torch.load, weights_only=False: the folder is a fixture torch wrote, and its
.metadata is a plain pickle that only this route reads). CONVERTED (one .safetensors file, or a
folder with model.safetensors.index.json) is read with safetensors.torch.load_file. Both must hold
the same tensor names with equal dtype, shape and bytes, and every converted file must carry
__metadata__ {"format": "pt"}. Prints 'ok ...' or the differences and exits 1.
"""
import json
import os
import sys

import torch
from safetensors import safe_open
from safetensors.torch import load_file

from check_weights_export import read_source  # the one reading of a source folder


def read_converted(path, problems):
    files = [path]
    if os.path.isdir(path):
        index = os.path.join(path, "model.safetensors.index.json")
        files = [os.path.join(path, "model.safetensors")]
        if os.path.exists(index):
            files = [os.path.join(path, f) for f in sorted(set(json.load(open(index))["weight_map"].values()))]
    tensors = {}
    for f in files:
        with safe_open(f, framework="pt") as handle:
            if handle.metadata() != {"format": "pt"}:
                problems.append("%s: __metadata__ is %s" % (f, handle.metadata()))
        tensors.update(load_file(f))
    return tensors, len(files)


def main():
    problems = []
    want, kind = read_source(sys.argv[1])
    got, files = read_converted(sys.argv[2], problems)
    if set(want) != set(got):
        problems.append("names differ: missing %s, extra %s" % (sorted(set(want) - set(got)), sorted(set(got) - set(want))))
    for name in sorted(set(want) & set(got)):
        a, b = want[name], got[name]
        if a.dtype != b.dtype or tuple(a.shape) != tuple(b.shape):
            problems.append("%s: %s %s vs %s %s" % (name, a.dtype, tuple(a.shape), b.dtype, tuple(b.shape)))
        elif not torch.equal(a.contiguous().view(-1).view(torch.uint8), b.contiguous().view(-1).view(torch.uint8)):
            problems.append("%s: bytes differ" % name)
    if problems:
        print("\n".join(problems))
        sys.exit(1)
    print("ok %s: %d tensors of a %s folder equal in %d converted file(s)" % (torch.__version__, len(got), kind, files))


if __name__ == "__main__":
    main()
