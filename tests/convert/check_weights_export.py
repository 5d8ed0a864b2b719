# SPDX-License-Identifier: MIT
"""Judges a weights export of a folder (`ckpt-inspect convert DIR -o OUT.pt`, the app's File >
Export Weights… on an open folder) with real torch.

usage: check_weights_export.py SOURCE_DIR EXPORTED.pt

EXPORTED.pt must load with torch.load(weights_only=True) (map_location="cpu": a folder of cuda
shards keeps its devices) and hold a flat state_dict. SOURCE_DIR is read by the library that wrote
it: .bin shards with torch.load(weights_only=True) of every shard its index lists, safetensors
shards with safetensors.torch.load_file (by their header and bytes where this torch has no
safetensors package, as torch 1.13: a JSON header and raw little-endian bytes), a DCP folder
with torch's dcp_to_torch_save (torch 2 only). Both must hold the same names with equal dtype,
shape and bytes. Prints 'ok ...' or the differences and exits 1.
"""
import json
import os
import struct
import sys
import tempfile

import torch

SAFETENSORS_DTYPES = {
    "F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
    "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8,
    "BOOL": torch.bool,
}


def read_safetensors(path):
    with open(path, "rb") as handle:
        (length,) = struct.unpack("<Q", handle.read(8))
        header = json.loads(handle.read(length))
        data = handle.read()
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        start, end = entry["data_offsets"]
        dtype = SAFETENSORS_DTYPES[entry["dtype"]]
        raw = bytearray(data[start:end])
        flat = torch.frombuffer(raw, dtype=dtype) if raw else torch.empty(0, dtype=dtype)
        tensors[name] = flat.reshape(entry["shape"])
    return tensors


try:  # the library that wrote the shards, where this torch has it
    from safetensors.torch import load_file as read_safetensors_file
except ImportError:
    read_safetensors_file = read_safetensors


def read_source(folder):
    """The tensors of SOURCE_DIR by the library that wrote it, and its kind ("bin", "safetensors",
    "dcp"); check_folder_conversion.py judges `convert DIR -o OUT.safetensors` with it too."""
    if os.path.exists(os.path.join(folder, ".metadata")):
        from torch.distributed.checkpoint.format_utils import dcp_to_torch_save
        with tempfile.TemporaryDirectory() as scratch:
            path = os.path.join(scratch, "whole.pt")
            dcp_to_torch_save(folder, path)
            state = torch.load(path, weights_only=False)  # a fixture torch wrote: its own pickle
        flat = {}

        def walk(prefix, value):
            if isinstance(value, dict):
                for key, inner in value.items():
                    walk(prefix + str(key) + ".", inner)
            elif torch.is_tensor(value):
                flat[prefix[:-1]] = value
        walk("", state)
        return flat, "dcp"
    for index_name, kind in (("model.safetensors.index.json", "safetensors"),
                             ("pytorch_model.bin.index.json", "bin")):
        index = os.path.join(folder, index_name)
        if os.path.exists(index):
            files = sorted(set(json.load(open(index))["weight_map"].values()))
            tensors = {}
            for name in files:
                path = os.path.join(folder, name)
                tensors.update(read_safetensors_file(path) if kind == "safetensors"
                               else torch.load(path, map_location="cpu", weights_only=True))
            return tensors, kind
    raise SystemExit("no index or .metadata in %s" % folder)


def main():
    want, kind = read_source(sys.argv[1])
    got = torch.load(sys.argv[2], map_location="cpu", weights_only=True)
    problems = []
    if not isinstance(got, dict) or not all(torch.is_tensor(value) for value in got.values()):
        raise SystemExit("%s is not a flat state_dict: %r" % (sys.argv[2], type(got)))
    if set(want) != set(got):
        problems.append("names differ: missing %s, extra %s"
                        % (sorted(set(want) - set(got)), sorted(set(got) - set(want))))
    for name in sorted(set(want) & set(got)):
        a, b = want[name], got[name]
        if a.dtype != b.dtype or tuple(a.shape) != tuple(b.shape):
            problems.append("%s: %s %s vs %s %s" % (name, a.dtype, tuple(a.shape), b.dtype, tuple(b.shape)))
        elif not torch.equal(a.contiguous().view(-1).view(torch.uint8),
                             b.contiguous().view(-1).view(torch.uint8)):
            problems.append("%s: bytes differ" % name)
    if problems:
        print("\n".join(problems))
        sys.exit(1)
    print("ok %s: %d tensors of a %s folder equal in %s (weights_only=True)"
          % (torch.__version__, len(got), kind, os.path.basename(sys.argv[2])))


if __name__ == "__main__":
    main()
