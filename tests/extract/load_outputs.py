# SPDX-License-Identifier: MIT
"""Loads every file ckpt-inspect wrote into a folder: *.pt with torch.load(weights_only=True),
*.safetensors with safetensors.torch.load_file where that library is installed. Only files this
project wrote are loaded (from the corpus they keep nothing but tensors).

usage: load_outputs.py FOLDER     prints 'ok N' or the failures and exits 1
"""
import glob
import os
import sys

import torch

try:
    from safetensors.torch import load_file
except ImportError:  # Debian 12's torch 1.13
    load_file = None

folder = sys.argv[1]
failures, loaded = [], 0
for path in sorted(glob.glob(os.path.join(folder, "*.pt"))):
    try:
        torch.load(path, weights_only=True, map_location="cpu")
        loaded += 1
    except Exception as error:  # noqa: BLE001 - every failure is reported
        failures.append("%s: %s" % (os.path.basename(path), str(error)[:300]))
if load_file:
    for path in sorted(glob.glob(os.path.join(folder, "*.safetensors"))):
        try:
            load_file(path)
            loaded += 1
        except Exception as error:  # noqa: BLE001
            failures.append("%s: %s" % (os.path.basename(path), str(error)[:300]))
if failures:
    print("\n".join(failures))
    sys.exit(1)
print("ok %d" % loaded)
