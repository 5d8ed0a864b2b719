# SPDX-License-Identifier: MIT
"""Judges `extract --plain-values` copies with real torch, every copy in one interpreter run.

usage: check_plain_values.py JOBS.json
  JOBS.json: [{"output": OUT, "expected": IN.expected.json, "cast": null | "float16" | ...}, ...]
  (tests/fixtures/dtype-cast/generate_dtype_cast.py writes the inputs and their expectations: what
  torch.load gives, NumPy values included.) OUT must load with torch.load(weights_only=True) and no
  allowlisting (torch 2.x: get_unsafe_globals_in_checkpoint finds none) and hold: each NumPy integer
  or bool scalar as the Python int or bool it equals, a float or complex one as a 0-d tensor of its
  dtype (torch 1.13's weights_only unpickler has no BINFLOAT), each NumPy array
  as a tensor of its dtype, shape and values (uint16/32/64, which torch 1.13 lacks: nested lists of
  ints), floats compared by their bits (float.hex); with "cast", float arrays as torch's .to(cast) of
  them; NumPy values that hold no numbers (strings, objects) absent; the tensors unchanged.
Prints one line per job, 'ok ...' or the differences, and exits 1 if any failed. Only files written
by ckpt-inspect are loaded here.
"""
import hashlib
import json
import sys

import torch


def plain(value):
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, bool) or isinstance(value, int):
        return value
    if isinstance(value, float):
        return float.hex(value)
    if isinstance(value, complex):
        return [float.hex(value.real), float.hex(value.imag)]
    return repr(value)


def unplain(value):
    if isinstance(value, list):
        return [unplain(v) for v in value]
    if isinstance(value, str):
        return float.fromhex(value)
    return value


def untyped(t):
    return t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage().untyped()


def check(job):
    problems = []
    out = torch.load(job["output"], weights_only=True)
    if hasattr(torch.serialization, "get_unsafe_globals_in_checkpoint"):
        unsafe = torch.serialization.get_unsafe_globals_in_checkpoint(job["output"])
        if unsafe:
            problems.append("needs allowlisting: %s" % unsafe)
    expected = json.load(open(job["expected"]))["values"]
    cast = job.get("cast")
    want_names = [k for k, v in expected.items() if not (v.get("kind") == "array" and v["values"] is None)]
    if sorted(out.keys()) != sorted(want_names):
        problems.append("names %s, want %s" % (sorted(set(out.keys()) ^ set(want_names)), ""))
    for name, want in expected.items():
        if name not in out:
            continue
        got = out[name]
        kind = want["kind"]
        if kind == "tensor":
            if cast and want["dtype"] in ("float64", "float32", "float16", "bfloat16"):
                continue  # tst_dtypecast judges cast tensors
            if str(got.dtype).replace("torch.", "") != want["dtype"] or \
                    hashlib.sha256(bytes(untyped(got).tolist())).hexdigest() != want["sha256"]:
                problems.append("%s: tensor changed" % name)
            continue
        numpy_type = want["numpy"]
        if kind == "scalar":
            if numpy_type.startswith("float"):  # a 0-d tensor: torch 1.13 loads no Python float
                dtype = getattr(torch, numpy_type)
                value = torch.tensor(unplain(want["values"]), dtype=dtype)
                if cast:
                    value, dtype = value.to(getattr(torch, cast)), getattr(torch, cast)
                if not isinstance(got, torch.Tensor) or got.dim() != 0 or got.dtype != dtype \
                        or plain(got.item()) != plain(value.item()):
                    problems.append("%s: %r, want a 0-d %s tensor %s" % (name, got, dtype, want["values"]))
                continue
            if numpy_type.startswith("complex"):
                if not isinstance(got, torch.Tensor) or got.dim() != 0 or str(got.dtype) != "torch." + numpy_type \
                        or plain(got.item()) != want["values"]:
                    problems.append("%s: %r, want a 0-d %s tensor %s" % (name, got, numpy_type, want["values"]))
                continue
            python = bool if numpy_type == "bool" else float if numpy_type.startswith("float") else int
            if type(got) is not python or plain(got) != want["values"]:
                problems.append("%s: %r (%s), want %s %s" % (name, got, type(got).__name__, python.__name__,
                                                           want["values"]))
            continue
        if numpy_type in ("uint16", "uint32", "uint64"):
            if got != want["values"]:
                problems.append("%s: %r, want the list %s" % (name, got, want["values"]))
            continue
        dtype = getattr(torch, numpy_type)
        if not isinstance(got, torch.Tensor):
            problems.append("%s: %r is not a tensor" % (name, type(got)))
            continue
        values = want["values"]
        if cast and dtype in (torch.float64, torch.float32, torch.float16):
            values = plain(torch.tensor(unplain(values), dtype=dtype).to(getattr(torch, cast)).tolist())
            dtype = getattr(torch, cast)
        if got.dtype != dtype or list(got.shape) != want["shape"] or plain(got.tolist()) != values:
            problems.append("%s: %s%s %s, want %s%s %s" % (name, got.dtype, list(got.shape), plain(got.tolist()),
                                                        dtype, want["shape"], values))
        if want["fortran"] and got.dim() > 1 and got.stride()[0] != 1:
            problems.append("%s: stride %s, want Fortran order" % (name, got.stride()))
    return problems


def main():
    failed = 0
    for job in json.load(open(sys.argv[1])):
        try:
            problems = check(job)
        except Exception as error:  # a copy that does not load fails its job, said
            problems = ["%s: %s" % (type(error).__name__, error)]
        if problems:
            failed += 1
            print("FAIL %s: %s" % (job["output"], "; ".join(problems[:8])))
        else:
            print("ok %s (torch %s)" % (job["output"], torch.__version__))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
