# SPDX-License-Identifier: MIT
"""Writes the checkpoints `ckpt-inspect extract` must rescue, with the torch that runs this script
(Debian's 1.13 or the modern one), and next to each one the truth from torch itself:
<name>.expected.json = the state_dict names in order (as model.state_dict() gives them), per tensor
dtype, shape, stride, storage offset and the SHA-256 of its storage bytes, and which names share a
storage.

usage: make_rescue_fixtures.py OUTDIR
"""
import argparse
import collections
import hashlib
import json
import os
import sys

import torch

try:
    import numpy as np
except ImportError:  # Debian 12's torch 1.13 comes without NumPy
    np = None

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rescue_models  # noqa: E402


def untyped_storage(t):
    return t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage().untyped()


def storage_bytes_sha(t):
    return hashlib.sha256(bytes(untyped_storage(t).tolist())).hexdigest()


def describe(state_dict):
    tensors = []
    ptrs = {}
    for name, t in state_dict.items():
        ptr = untyped_storage(t).data_ptr()
        ptrs.setdefault(ptr, []).append(name)
        tensors.append({
            "name": name,
            "dtype": str(t.dtype).replace("torch.", ""),
            "shape": list(t.shape),
            "stride": list(t.stride()),
            "storage_offset": t.storage_offset(),
            "storage_sha256": storage_bytes_sha(t),
        })
    return {"torch": torch.__version__, "tensors": tensors,
            "shared": [names for names in ptrs.values() if len(names) > 1]}


def write(outdir, name, obj, state_dict, extra=None):
    path = os.path.join(outdir, name)
    torch.save(obj, path)
    truth = describe(state_dict)
    truth.update(extra or {})
    with open(path + ".expected.json", "w") as f:
        json.dump(truth, f, indent=1)


def main():
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    torch.manual_seed(0)
    model = rescue_models.RescueNet()
    model.blocks[0].norm.running_mean.add_(0.5)
    sd = model.state_dict()
    # A whole pickled model: its class lives in code the loader does not have.
    write(outdir, "whole_module.pt", model, sd)

    # A Lightning-style checkpoint: hyper_parameters as an argparse.Namespace (weights_only rejects it),
    # state_dict names prefixed by the LightningModule's attribute, an optimizer state.
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    loss = model.head(model.embed(torch.tensor([1, 2]))).sum()
    loss.backward()
    optimizer.step()
    lightning_sd = collections.OrderedDict(("model." + k, v) for k, v in model.state_dict().items())
    lightning = {
        "epoch": 3,
        "global_step": 120,
        "pytorch-lightning_version": "2.1.0",
        "state_dict": lightning_sd,
        "optimizer_states": [optimizer.state_dict()],
        "lr_schedulers": [],
        "hyper_parameters": argparse.Namespace(lr=0.01, layers=2, name="rescue"),
        "hparams_name": "args",
    }
    opt_sd = {}
    for index, state in optimizer.state_dict()["state"].items():
        for key, value in state.items():
            if torch.is_tensor(value):
                opt_sd["state.%s.%s" % (index, key)] = value
    write(outdir, "lightning.ckpt", lightning, lightning_sd,
          {"optimizer_names": sorted(opt_sd)})

    if np is None:
        return
    # A training checkpoint with NumPy objects (a NumPy 1/2 pickle names numpy.core or numpy._core).
    plain = collections.OrderedDict((k, v.clone()) for k, v in model.state_dict().items())
    numpy_ckpt = {
        "model": plain,
        "best_score": np.float64(0.93),
        "mask": np.arange(4, dtype=np.int32),
        "seed_state": np.random.RandomState(0).get_state()[1][:4],
        "args": argparse.Namespace(batch_size=8),
    }
    write(outdir, "numpy_objects.pt", numpy_ckpt, plain,
          {"numpy": {"version": np.__version__, "best_score": float(numpy_ckpt["best_score"]),
                     "mask": numpy_ckpt["mask"].tolist(), "batch_size": 8}})


if __name__ == "__main__":
    main()
