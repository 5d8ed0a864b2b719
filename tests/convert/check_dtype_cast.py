# SPDX-License-Identifier: MIT
"""Judges `convert`/`extract --dtype` copies with real torch, every copy in one interpreter run.

usage: check_dtype_cast.py JOBS.json [--strict-nan-from VERSION]
  JOBS.json: [{"input": IN, "output": OUT, "to": "bfloat16"|"float16"|"float32", "torch2": bool}, ...]
  IN and OUT are torch.save files (.pt) or .safetensors files. Jobs with "torch2" (a float8 tensor
  in them) are skipped by torch 1.13. For every job, OUT must load with weights_only=True (a
  .safetensors with the safetensors library where it is installed) and hold the tensors of IN, each
  float64/float32/float16/bfloat16 tensor equal bit for bit to IN's tensor `.to(torch.<to>)` in this
  torch, every other tensor byte for byte; a .pt copy keeps every view's offset and stride, and
  tensors share a storage in OUT exactly where they do in IN, that storage equal bit for bit to IN's
  whole storage `.to()`. Where this torch writes a NaN with other bits than the copy's (torch 1.13
  and 2.14 disagree: docs/dtype-cast.md), both must be NaN; those are counted and named, and fail
  the job in a torch whose version starts with --strict-nan-from's (the copy follows torch 2.14).
Prints one line per job, 'ok ...' or the differences, and exits 1 if any job failed. Only files
written by torch or by ckpt-inspect are loaded here.
"""
import json
import struct
import sys
from collections import OrderedDict

import torch

try:
    from safetensors.torch import load_file
except ImportError:  # Debian 12's torch 1.13 has no safetensors
    load_file = None

CAST = {torch.float64, torch.float32, torch.float16, torch.bfloat16}
INTS = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
ST_DTYPES = {"F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
             "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8,
             "BOOL": torch.bool, "C64": torch.complex64}


def read_safetensors(path):
    """The safetensors format read with torch alone, where the library is missing (torch 1.13)."""
    if load_file is not None:
        return load_file(path)
    data = open(path, "rb").read()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    out = OrderedDict()
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        raw = bytearray(data[8 + length + begin:8 + length + end])
        dtype = ST_DTYPES[entry["dtype"]]
        flat = torch.frombuffer(raw, dtype=dtype) if raw else torch.zeros(0, dtype=dtype)
        out[name] = flat.reshape(entry["shape"])
    return out


def load(path):
    if path.endswith(".safetensors"):
        return read_safetensors(path)
    return torch.load(path, weights_only=True)


def untyped(t):
    return t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage().untyped()


def as_ints(t):
    flat = t.contiguous().reshape(-1)
    return flat.view(INTS[t.element_size()]) if t.dtype != torch.bool else flat.view(torch.uint8)


STRICT_NAN = False


def compare(label, got, want, problems, nan_notes):
    if got.dtype != want.dtype or list(got.shape) != list(want.shape):
        problems.append("%s: %s%s, want %s%s" % (label, got.dtype, list(got.shape), want.dtype, list(want.shape)))
        return
    a, b = as_ints(got), as_ints(want)
    differ = (a != b).nonzero().reshape(-1)
    if differ.numel() == 0:
        return
    if not want.is_floating_point():
        problems.append("%s: %d values differ" % (label, differ.numel()))
        return
    ga = got.contiguous().reshape(-1)[differ]
    wa = want.contiguous().reshape(-1)[differ]
    both_nan = torch.isnan(ga.float()) & torch.isnan(wa.float())
    if not bool(both_nan.all()):
        k = int((~both_nan).nonzero()[0])
        i = int(differ[k])
        problems.append("%s: %d values differ, first at %d: %s, torch %s" % (
            label, int((~both_nan).sum()), i, hex(int(a[i]) & ((1 << (8 * got.element_size())) - 1)),
            hex(int(b[i]) & ((1 << (8 * got.element_size())) - 1))))
        return
    mask = (1 << (8 * got.element_size())) - 1
    pairs = sorted({(hex(int(x) & mask), hex(int(y) & mask))
                    for x, y in zip(a[differ].tolist()[:8], b[differ].tolist()[:8])})
    (problems if STRICT_NAN else nan_notes).append("%s: %d NaN written with other bits than this torch's (copy, torch): %s" % (
        label, differ.numel(), pairs[:3]))


def whole_storage(t):
    n = untyped(t).nbytes() // t.element_size()
    return t.as_strided((n,), (1,), 0)


def check(job):
    to = getattr(torch, job["to"])
    inp, out = load(job["input"]), load(job["output"])
    problems, nan_notes = [], []
    if list(out.keys()) != list(inp.keys()) and not job["output"].endswith(".safetensors"):
        problems.append("names %s, want %s" % (list(out.keys())[:5], list(inp.keys())[:5]))
    if set(out.keys()) != set(inp.keys()):
        return problems + ["names differ: %s" % sorted(set(out.keys()) ^ set(inp.keys()))], nan_notes
    cast = 0
    for name, t in inp.items():
        want = t.to(to) if t.dtype in CAST else t
        cast += t.dtype in CAST and t.dtype != to
        compare(name, out[name], want, problems, nan_notes)
    if job["output"].endswith(".pt"):
        groups_in, groups_out = {}, {}
        for name, t in inp.items():
            groups_in.setdefault(untyped(t).data_ptr(), []).append(name)
            o = out[name]
            groups_out.setdefault(untyped(o).data_ptr(), []).append(name)
            if (o.stride(), o.storage_offset()) != (t.stride(), t.storage_offset()):
                problems.append("%s: stride %s offset %d, want %s %d" % (
                    name, o.stride(), o.storage_offset(), t.stride(), t.storage_offset()))
        if sorted(groups_in.values()) != sorted(groups_out.values()):
            problems.append("shared storages %s, want %s" % (
                sorted(g for g in groups_out.values() if len(g) > 1),
                sorted(g for g in groups_in.values() if len(g) > 1)))
        seen = set()
        for name, t in inp.items():
            if untyped(t).data_ptr() in seen:
                continue
            seen.add(untyped(t).data_ptr())
            base = whole_storage(t)
            compare(name + " (whole storage)", whole_storage(out[name]), base.to(to) if t.dtype in CAST else base,
                    problems, nan_notes)
    return problems, nan_notes + ["%d tensors cast" % cast]


def main():
    global STRICT_NAN
    jobs = json.load(open(sys.argv[1]))
    if len(sys.argv) > 3 and sys.argv[2] == "--strict-nan-from":
        STRICT_NAN = torch.__version__.startswith(sys.argv[3])
    failed = 0
    for job in jobs:
        if job.get("torch2") and not hasattr(torch, "float8_e4m3fn"):
            print("skipped %s (torch %s has no float8)" % (job["output"], torch.__version__))
            continue
        try:
            problems, notes = check(job)
        except Exception as error:  # a copy that does not load is a failure of that job, said
            problems, notes = ["%s: %s" % (type(error).__name__, error)], []
        if problems:
            failed += 1
            print("FAIL %s -> %s (%s): %s" % (job["input"], job["output"], job["to"], "; ".join(problems[:6])))
        else:
            print("ok %s (%s, torch %s): %s" % (job["output"], job["to"], torch.__version__, "; ".join(notes)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
