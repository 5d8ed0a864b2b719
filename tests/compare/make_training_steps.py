# SPDX-License-Identifier: MIT
"""Two training steps written by torch, and what torch says differs between them.

usage: make_training_steps.py OUTDIR

OUTDIR/step0.pt, step1.pt: state_dicts before and after one SGD step (a frozen layer and an
integer buffer stay the same, one parameter gets no gradient). OUTDIR/step0_edited.pt: step0 with
one tensor under another name and one cast to float16. OUTDIR/expected.json: per name, whether
torch.equal says the two steps differ, and the largest absolute difference
(a.double() - b.double()).abs().max() and relative difference |a - b| / max(|a|, |b|) (0/0 left
out), computed by torch.
"""
import collections
import json
import os
import sys

import torch
from torch import nn


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 4), nn.Linear(4, 4))
    model[0].requires_grad_(False)  # frozen: unchanged by the step
    model[4].bias.requires_grad_(False)
    step0 = collections.OrderedDict((k, v.clone()) for k, v in model.state_dict().items())
    torch.save(step0, os.path.join(out, "step0.pt"))
    optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
    model.train()
    loss = model(torch.randn(32, 8)).pow(2).mean()
    loss.backward()
    optimizer.step()
    step1 = model.state_dict()
    torch.save(step1, os.path.join(out, "step1.pt"))

    expected = {}
    for name, a in step0.items():
        b = step1[name]
        entry = {"differs": not torch.equal(a, b)}
        if entry["differs"] and a.is_floating_point():
            x, y = a.double(), b.double()
            diff = (x - y).abs()
            scale = torch.maximum(x.abs(), y.abs())
            entry["max_abs"] = diff.max().item()
            entry["max_rel"] = (diff[scale > 0] / scale[scale > 0]).max().item()
            entry["differing"] = int((x != y).sum().item())
        expected[name] = entry

    edited = collections.OrderedDict(step0)
    edited["4.renamed_weight"] = edited.pop("4.weight")
    edited["3.weight"] = edited["3.weight"].half()
    torch.save(edited, os.path.join(out, "step0_edited.pt"))
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump({"torch": torch.__version__, "tensors": expected}, f, indent=1)


if __name__ == "__main__":
    main()
