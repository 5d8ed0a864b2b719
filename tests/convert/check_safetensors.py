# SPDX-License-Identifier: MIT
"""Judges `ckpt-inspect convert` with the real safetensors library and torch.

usage:
  check_safetensors.py to-safetensors ORIGINAL.pt CONVERTED [--key KEY]
      CONVERTED (a .safetensors file, or a folder of shards with model.safetensors.index.json) must
      load with safetensors.torch and hold exactly the tensors torch.load(ORIGINAL, weights_only=True)
      gives (under KEY when given), equal in dtype, shape and every value, with __metadata__
      {"format": "pt"}.
  check_safetensors.py to-torch-ref REFERENCE.pt CONVERTED.pt DEVICE
      the same, against torch.load(REFERENCE.pt) (the file the safetensors was converted from), for
      a torch without the safetensors library
  check_safetensors.py to-torch SAFETENSORS CONVERTED.pt DEVICE
      CONVERTED.pt must load with torch.load(weights_only=True), every storage recorded on DEVICE,
      and equal what safetensors.torch.load_file(SAFETENSORS) gives, names in the file's order.
Prints 'ok ...' or the differences and exits 1. Only files written by torch or by ckpt-inspect are
loaded here.
"""
import json
import os
import sys

import torch

try:
    from safetensors import safe_open
    from safetensors.torch import load_file
except ImportError:  # Debian 12's torch 1.13 has no safetensors: only the to-torch-ref mode runs there
    safe_open = load_file = None


def load_converted(path, problems):
    files = [path]
    if os.path.isdir(path):
        index = os.path.join(path, "model.safetensors.index.json")
        if os.path.exists(index):
            weight_map = json.load(open(index))["weight_map"]
            files = sorted(set(os.path.join(path, f) for f in weight_map.values()))
            total = json.load(open(index))["metadata"]["total_size"]
        else:
            files = [os.path.join(path, "model.safetensors")]
            weight_map, total = None, None
    tensors = {}
    for f in files:
        with safe_open(f, framework="pt") as handle:
            if handle.metadata() != {"format": "pt"}:
                problems.append("%s: __metadata__ is %s" % (f, handle.metadata()))
        part = load_file(f)
        for name, t in part.items():
            if name in tensors:
                problems.append("%s appears in two shards" % name)
            tensors[name] = t
            if os.path.isdir(path) and weight_map is not None and weight_map.get(name) != os.path.basename(f):
                problems.append("index puts %s in %s, found in %s" % (name, weight_map.get(name), f))
    if os.path.isdir(path) and weight_map is not None:
        if set(weight_map) != set(tensors):
            problems.append("index names differ from the shards' tensors")
        size = sum(t.numel() * t.element_size() for t in tensors.values())
        if size != total:
            problems.append("index total_size %s, tensors hold %s bytes" % (total, size))
    return tensors, len(files)


def same(name, a, b, problems):
    if a.dtype != b.dtype or tuple(a.shape) != tuple(b.shape):
        problems.append("%s: %s %s vs %s %s" % (name, a.dtype, tuple(a.shape), b.dtype, tuple(b.shape)))
    elif not torch.equal(a.contiguous().view(-1).view(torch.uint8) if a.numel() else a,
                         b.contiguous().view(-1).view(torch.uint8) if b.numel() else b):
        problems.append("%s: values differ" % name)


def main():
    mode = sys.argv[1]
    problems = []
    if mode == "to-safetensors":
        original, converted = sys.argv[2], sys.argv[3]
        want = torch.load(original, map_location="cpu", weights_only=True)
        if "--key" in sys.argv:
            want = want[sys.argv[sys.argv.index("--key") + 1]]
        want = {k: v for k, v in want.items() if torch.is_tensor(v)}
        got, files = load_converted(converted, problems)
        if set(got) != set(want):
            problems.append("names differ: missing %s, extra %s" % (
                sorted(set(want) - set(got)), sorted(set(got) - set(want))))
        for name in sorted(set(got) & set(want)):
            same(name, got[name], want[name], problems)
        summary = "%d tensors in %d file(s)" % (len(got), files)
    else:
        source, converted, device = sys.argv[2], sys.argv[3], sys.argv[4]
        if mode == "to-torch-ref":
            want = torch.load(source, map_location="cpu", weights_only=True)
            order = list(want.keys())
        else:
            want = load_file(source)
            with safe_open(source, framework="pt") as handle:
                order = list(handle.keys())
        locations = []

        def map_location(storage, location):
            locations.append(location)
            return storage

        got = torch.load(converted, map_location=map_location, weights_only=True)
        if sorted(got.keys()) != sorted(order):
            problems.append("names differ: %s vs %s" % (list(got.keys()), order))
        for name in set(got) & set(want):
            same(name, got[name], want[name], problems)
        if set(locations) != {device}:
            problems.append("storages recorded on %s, expected %s" % (sorted(set(locations)), device))
        summary = "%d tensors on %s" % (len(got), device)
    if problems:
        print("\n".join(problems))
        sys.exit(1)
    print("ok %s: %s" % (torch.__version__, summary))


if __name__ == "__main__":
    main()
