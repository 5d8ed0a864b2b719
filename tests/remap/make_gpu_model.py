#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes a whole model saved with torch.save(model) "on a GPU": the model of tests/remap/usercode
(package gpunets, the user's own classes, so the file is rightly "cannot verify"), every storage
recorded on cuda:1 except the BatchNorm's running statistics, which stay on the CPU. This machine
needs no GPU: a device tagger registered with torch.serialization.register_package (the pattern of
tests/fixtures/generate_fixtures.py) makes torch.save record the tag, exactly as a save on a GPU
would, and torch.save writes the file.

Also writes whole_model.expected.json: each tensor's name (module path), recorded device, dtype,
shape and the SHA-256 of its bytes, taken from the model in memory.

And a folder of .bin shards as from_pretrained reads them (shards/: pytorch_model-0000N-of-00002.bin,
the index, config.json), every storage on cuda:1, the second shard holding the user's tensor
subclass gpunets.blocks.ScaledTensor (so the folder, too, cannot be verified), with
shards.expected.json in the same form.

Usage: make_gpu_model.py OUTDIR   (works with torch 1.13 and 2.x)
"""
import hashlib
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "usercode"))
from gpunets.blocks import GpuNet, ScaledTensor  # noqa: E402

_TAGS = {}  # StorageImpl pointer -> (tag, tensor kept alive)


def untyped(t):
    return t.untyped_storage() if hasattr(t, "untyped_storage") else t._storage()


def tag(t, device_tag):
    _TAGS[untyped(t)._cdata] = (device_tag, t)


def _tagger(storage):
    try:
        entry = _TAGS.get(storage._cdata)
    except AttributeError:
        return None
    return entry[0] if entry is not None else None


def _never(obj, location):
    return None


torch.serialization.register_package(1, _tagger, _never)


def tensor_bytes(t):
    return t.detach().contiguous().reshape(-1).numpy().tobytes()


def main(outdir):
    os.makedirs(outdir, exist_ok=True)
    torch.manual_seed(24)
    model = GpuNet()
    with torch.no_grad():
        model.bn.running_mean.add_(0.125)
        model.bn.num_batches_tracked.add_(3)
    tensors = dict(model.state_dict(keep_vars=True))
    tensors["prototypes"] = model.prototypes
    expected = {"class": "gpunets.blocks.GpuNet", "torch": torch.__version__, "tensors": {}}
    for name, t in tensors.items():
        device = "cpu" if name.startswith("bn.running_") or name == "bn.num_batches_tracked" else "cuda:1"
        if device != "cpu":
            tag(t, device)
        expected["tensors"][name] = {"recorded": device, "dtype": str(t.dtype), "shape": list(t.shape),
                                     "sha256": hashlib.sha256(tensor_bytes(t)).hexdigest()}
    path = os.path.join(outdir, "whole_model.pt")
    torch.save(model, path)
    with open(path + ".expected.json", "w") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
    print("wrote %s with torch %s: %d tensors" % (path, torch.__version__, len(tensors)))

    # The folder of shards.
    folder = os.path.join(outdir, "shards")
    os.makedirs(folder, exist_ok=True)
    state = {name: t.detach().clone() for name, t in model.state_dict().items()}
    names = sorted(state)
    half = len(names) // 2
    shards = {"pytorch_model-00001-of-00002.bin": names[:half], "pytorch_model-00002-of-00002.bin": names[half:]}
    weight_map, total, expected = {}, 0, {"class": None, "torch": torch.__version__, "tensors": {}}
    for shard, shard_names in shards.items():
        part = {}
        for name in shard_names:
            t = state[name]
            if shard.startswith("pytorch_model-00002") and t.is_floating_point():
                t = t.as_subclass(ScaledTensor)
                t.unit = "scaled"  # torch 1.13 cannot load a subclass saved without any __dict__ state
            tag(t, "cuda:1")
            part[name] = t
            weight_map[name] = shard
            total += t.numel() * t.element_size()
            expected["tensors"][name] = {"recorded": "cuda:1", "dtype": str(t.dtype), "shape": list(t.shape),
                                         "sha256": hashlib.sha256(tensor_bytes(t.as_subclass(torch.Tensor))).hexdigest()}
        torch.save(part, os.path.join(folder, shard))
    with open(os.path.join(folder, "pytorch_model.bin.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=1)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump({"model_type": "gpunet", "architectures": ["GpuNet"]}, f)
    with open(os.path.join(outdir, "shards.expected.json"), "w") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
    print("wrote %s: %d tensors in %d shards" % (folder, len(weight_map), len(shards)))


if __name__ == "__main__":
    main(sys.argv[1])
