#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The headline case, seen from torch: ORIGINAL records every storage on a CUDA device, COPY is
what `ckpt-inspect remap --map '*=cpu'` wrote. On this CPU-only machine plain
torch.load(ORIGINAL, weights_only=True) must fail with torch's own CUDA message, and plain
torch.load(COPY, weights_only=True) (no map_location) must give the same tensors, on the CPU.

Usage: headline_load.py ORIGINAL COPY   (prints what torch said; exit 0 when both hold)
"""
import sys

import torch


def main(original, copy):
    if torch.cuda.is_available():
        print("SKIP this machine has CUDA: torch would load the original")
        return 0
    try:
        torch.load(original, weights_only=True)
        print("UNEXPECTED: torch loaded the original")
        return 3
    except Exception as e:
        print("original refused by torch %s: %s" % (torch.__version__, " ".join(str(e).split())))
    loaded = torch.load(copy, weights_only=True)  # plain: no map_location
    reference = torch.load(original, weights_only=True, map_location="cpu")
    if list(loaded) != list(reference):
        print("names differ: %s vs %s" % (list(loaded), list(reference)))
        return 4
    for name, t in reference.items():
        c = loaded[name]
        if c.device.type != "cpu":
            print("%s loaded on %s" % (name, c.device))
            return 4
        if (c.dtype, c.shape, c.stride(), c.storage_offset()) != (t.dtype, t.shape, t.stride(), t.storage_offset()) \
                or not torch.equal(c, t):
            print("%s differs from the original" % name)
            return 4
    print("copy loaded by torch %s: %d tensors on cpu, equal to the original's" % (torch.__version__, len(loaded)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
