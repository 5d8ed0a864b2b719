#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks a zip checkpoint converted by `ckpt-inspect remap` from a 0.1.x tar file against the tar
file itself, without unpickling the tar (corpus files may be hostile): the tar's `storages` member
is walked with pickletools.genops, which only decodes opcodes, to find each storage's raw bytes;
the converted file is loaded with torch.load(weights_only=True); every tensor's storage bytes must
equal the raw bytes of the tar storage with the same position.
usage: check_tar_conversion.py TAR CONVERTED"""
import io
import pickletools
import struct
import sys
import tarfile

import torch

ELEMENT_SIZES = {"FloatStorage": 4, "DoubleStorage": 8, "LongStorage": 8, "IntStorage": 4, "ShortStorage": 2,
                 "CharStorage": 1, "ByteStorage": 1, "HalfStorage": 2, "BoolStorage": 1}


def skip_pickle(stream):
    """Moves past one pickle; returns the storage class name it mentions, if any."""
    name = None
    for opcode, arg, _ in pickletools.genops(stream):
        if opcode.name == "GLOBAL" and isinstance(arg, str) and arg.endswith("Storage"):
            name = arg.split(" ")[-1]
        if opcode.name == "STOP":
            return name
    raise ValueError("truncated pickle")


def raw_storages(tar_path):
    with tarfile.open(tar_path) as archive:
        data = archive.extractfile("storages").read()
    stream = io.BytesIO(data)
    ops = list(pickletools.genops(io.BytesIO(data)))
    count = next(arg for op, arg, _ in ops if op.name.startswith("BININT"))
    skip_pickle(stream)
    storages = []
    for _ in range(count):
        cls = skip_pickle(stream)
        (numel,) = struct.unpack("<q", stream.read(8))
        storages.append(stream.read(numel * ELEMENT_SIZES[cls]))
    return storages


def main():
    tar_path, converted = sys.argv[1], sys.argv[2]
    raw = raw_storages(tar_path)
    loaded = torch.load(converted, weights_only=True)
    seen = []
    for name, tensor in loaded.items():
        whole = tensor.storage_offset() == 0 and tensor.is_contiguous() \
            and tensor.numel() * tensor.element_size() == tensor.storage().nbytes()
        if not whole:
            sys.exit(f"{name}: not a whole-storage tensor; extend the check")
        seen.append(tensor.numpy().tobytes())
    if sorted(seen) != sorted(raw):
        sys.exit(f"storage bytes differ: converted {[len(s) for s in seen]} vs tar {[len(s) for s in raw]}")
    print(f"ok {len(raw)} storages match")


if __name__ == "__main__":
    main()
