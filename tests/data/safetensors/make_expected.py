#!/usr/bin/python3
"""Writes what an independent reader says about the real safetensors files in the shared corpus.

    /usr/bin/python3 tests/data/safetensors/make_expected.py [--corpus ../shared/corpus/files] [--out tests/data/safetensors]

Debian 12 has no python3-safetensors, so the C++ reader is checked against files written by the
real safetensors library (the corpus, which is not copied into this repository) and against this
script, which reads their headers with nothing but `json` and `struct`: a second implementation
of torch-format.md §8, not a copy of the C++ one. For each `<file>.safetensors` in the corpus it
writes `<file>.safetensors.expected.json` here:

    {"file", "sha256", "file_size", "header_length", "data_start",
     "metadata": {..} | null,
     "tensors": [{"name", "dtype", "torch_dtype", "shape", "stride", "numel", "data_offsets",
                  "file_offset", "nbytes"}]}   # in header order

`torch_dtype` and the element sizes come from the table below, which follows
safetensors' bindings/python/py_src/safetensors/torch.py (`_TYPES`) and torch's element sizes.
The files are committed; regenerating them is not part of the test run.
"""

import argparse
import hashlib
import json
import os
import struct
import sys

# safetensors dtype -> (torch dtype name, bytes per element)
TORCH_DTYPES = {
    "F64": ("float64", 8), "F32": ("float32", 4), "F16": ("float16", 2), "BF16": ("bfloat16", 2),
    "I64": ("int64", 8), "I32": ("int32", 4), "I16": ("int16", 2), "I8": ("int8", 1),
    "U64": ("uint64", 8), "U32": ("uint32", 4), "U16": ("uint16", 2), "U8": ("uint8", 1),
    "BOOL": ("bool", 1), "C64": ("complex64", 8),
    "F8_E4M3": ("float8_e4m3fn", 1), "F8_E5M2": ("float8_e5m2", 1),
}


def refuse_duplicates(pairs):
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise SystemExit("duplicate keys in a header: %r" % keys)
    return pairs  # a list keeps the header's order


def c_order_stride(shape):
    stride = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        stride[i] = stride[i + 1] * max(shape[i + 1], 1)
    return stride


def describe(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n].decode("utf-8"), object_pairs_hook=refuse_duplicates)
    metadata = None
    tensors = []
    for name, info in header:
        if name == "__metadata__":
            metadata = dict(info)
            continue
        info = dict(info)
        begin, end = info["data_offsets"]
        shape = list(info["shape"])
        numel = 1
        for dim in shape:
            numel *= dim
        torch_dtype, size = TORCH_DTYPES[info["dtype"]]
        assert end - begin == numel * size, name
        tensors.append({
            "name": name,
            "dtype": info["dtype"],
            "torch_dtype": torch_dtype,
            "shape": shape,
            "stride": c_order_stride(shape),
            "numel": numel,
            "data_offsets": [begin, end],
            "file_offset": 8 + n + begin,
            "nbytes": end - begin,
        })
    assert max([t["data_offsets"][1] for t in tensors] + [0]) + 8 + n == len(data)
    return {
        "file": os.path.basename(path),
        "sha256": hashlib.sha256(data).hexdigest(),
        "file_size": len(data),
        "header_length": n,
        "data_start": 8 + n,
        "metadata": metadata,
        "tensors": tensors,
    }


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", default=os.path.join(here, "..", "..", "..", "..", "shared", "corpus", "files"))
    parser.add_argument("--out", default=here)
    args = parser.parse_args()
    names = sorted(n for n in os.listdir(args.corpus) if n.endswith(".safetensors"))
    if not names:
        sys.exit("no .safetensors files in %s" % args.corpus)
    for name in names:
        result = describe(os.path.join(args.corpus, name))
        with open(os.path.join(args.out, name + ".expected.json"), "w") as f:
            json.dump(result, f, indent=1, sort_keys=True)
            f.write("\n")
        print("%s: %d tensors" % (name, len(result["tensors"])))


if __name__ == "__main__":
    main()
