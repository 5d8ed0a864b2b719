#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Judges a remapped copy of make_gpu_model.py's whole model with real torch.

ORIGINAL is the file as saved "on a GPU" (storages recorded on cuda:1); COPY is what
`ckpt-inspect remap --allow-dangerous --map cuda:1=cpu` wrote. Both are our own benign fixture, so
they are loaded with weights_only=False, the package of tests/remap/usercode on sys.path:
- on a machine without CUDA, plain torch.load(ORIGINAL) fails (the file really is a GPU save);
- plain torch.load(COPY), no map_location, gives a GpuNet whose every tensor is on the CPU and
  holds exactly the bytes expected.json recorded when the model was saved.

ORIGINAL and COPY may also be folders of .bin shards (make_gpu_model.py's shards/): then every
shard of COPY is loaded so, and every tensor of every shard checked the same way.

Usage: check_gpu_model.py ORIGINAL COPY EXPECTED.json   (prints "ok ..." and exits 0 when all hold)
"""
import hashlib
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "usercode"))


def tensor_bytes(t):
    return t.detach().contiguous().reshape(-1).numpy().tobytes()


def load(path):
    kwargs = {"weights_only": False} if "weights_only" in torch.load.__code__.co_varnames else {}
    return torch.load(path, **kwargs)  # no map_location: every storage where the file says


def check_tensors(tensors, expected, problems):
    if sorted(tensors) != sorted(expected["tensors"]):
        problems.append("tensors %s, expected %s" % (sorted(tensors), sorted(expected["tensors"])))
    for key, want in expected["tensors"].items():
        t = tensors.get(key)
        if t is None:
            continue
        if t.device.type != "cpu":
            problems.append("%s is on %s, planned cpu" % (key, t.device))
            continue
        t = t.as_subclass(torch.Tensor)
        if str(t.dtype) != want["dtype"] or list(t.shape) != want["shape"]:
            problems.append("%s is %s %s, expected %s %s" % (key, t.dtype, list(t.shape), want["dtype"],
                                                             want["shape"]))
        elif hashlib.sha256(tensor_bytes(t)).hexdigest() != want["sha256"]:
            problems.append("%s: the bytes differ from the saved model's" % key)


def main_folder(original, copy, expected, problems):
    shards = sorted(n for n in os.listdir(copy) if n.endswith(".bin"))
    if sorted(n for n in os.listdir(original) if n.endswith(".bin")) != shards:
        problems.append("the copy's shards %s differ from the original's" % shards)
    if not torch.cuda.is_available():
        try:
            load(os.path.join(original, shards[0]))
            problems.append("torch %s loaded an original shard without CUDA" % torch.__version__)
        except RuntimeError as error:
            if "CUDA" not in str(error):
                problems.append("the original shard failed for another reason: %s" % error)
    tensors = {}
    for shard in shards:
        tensors.update(load(os.path.join(copy, shard)))
    check_tensors(tensors, expected, problems)
    return "%d tensors in %d shards" % (len(tensors), len(shards))


def main(original, copy, expected_path):
    with open(expected_path) as f:
        expected = json.load(f)
    problems = []
    if os.path.isdir(original):
        what = main_folder(original, copy, expected, problems)
        for problem in problems:
            print("FAIL " + problem)
        if not problems:
            print("ok torch %s: %s on cpu, bytes identical" % (torch.__version__, what))
        return 1 if problems else 0
    if not torch.cuda.is_available():
        try:
            load(original)
            problems.append("torch %s loaded the original without CUDA" % torch.__version__)
        except RuntimeError as error:
            if "CUDA" not in str(error):
                problems.append("the original failed for another reason: %s" % error)
    model = load(copy)
    name = type(model).__module__ + "." + type(model).__name__
    if name != expected["class"]:
        problems.append("the copy holds a %s, not a %s" % (name, expected["class"]))
    tensors = dict(model.state_dict(keep_vars=True))
    tensors["prototypes"] = model.prototypes
    check_tensors(tensors, expected, problems)
    if problems:
        for problem in problems:
            print("FAIL " + problem)
        return 1
    print("ok torch %s: %d tensors of %s on cpu, bytes identical" % (torch.__version__, len(tensors), name))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3]))
