# SPDX-License-Identifier: MIT
"""Judges a `ckpt-inspect remap --rename-global numpy._core=numpy.core` copy of a NumPy 2 pickle
with a torch whose NumPy is 1.x (Debian 12's torch 1.13).

usage: check_renamed.py ORIGINAL RENAMED EXPECTED.json

The original must fail as users see it (No module named 'numpy._core'); the copy must load and hold
the same NumPy values, argparse Namespace and tensors torch wrote (EXPECTED.json, from
make_rescue_fixtures.py). Both files were written by torch for this test; no foreign file is
unpickled here.
"""
import hashlib
import json
import sys

import numpy as np
import torch


def main():
    original, renamed, expected_path = sys.argv[1:4]
    expected = json.load(open(expected_path))
    problems = []
    if not np.__version__.startswith("1."):
        print("skip: NumPy %s can read numpy._core" % np.__version__)
        return
    try:
        torch.load(original, weights_only=False)
        problems.append("the original loaded; the test proves nothing")
    except ModuleNotFoundError as error:
        if "numpy._core" not in str(error):
            problems.append("the original failed differently: %s" % error)
    loaded = torch.load(renamed, weights_only=False)
    values = expected["numpy"]
    if float(loaded["best_score"]) != values["best_score"]:
        problems.append("best_score %s != %s" % (loaded["best_score"], values["best_score"]))
    if loaded["mask"].tolist() != values["mask"]:
        problems.append("mask %s != %s" % (loaded["mask"].tolist(), values["mask"]))
    if loaded["args"].batch_size != values["batch_size"]:
        problems.append("args.batch_size %s" % loaded["args"].batch_size)
    model = loaded["model"]
    for want in expected["tensors"]:
        t = model[want["name"]]
        sha = hashlib.sha256(bytes(t.storage().untyped().tolist())).hexdigest()
        if sha != want["storage_sha256"]:
            problems.append("%s: bytes differ" % want["name"])
    if problems:
        print("\n".join(problems))
        sys.exit(1)
    print("ok %s with NumPy %s: %d tensors, NumPy values equal" % (torch.__version__, np.__version__, len(model)))


if __name__ == "__main__":
    main()
