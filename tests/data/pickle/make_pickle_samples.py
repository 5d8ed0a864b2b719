#!/usr/bin/env python3
"""Writes pickles with CPython's own pickler (protocols 0-5) for the pickle machine's unit tests.

Each sample NAME.pN.pkl comes with NAME.pN.expected: a canonical dump of the object computed by
Python from the object itself (not from the bytes), in the format tst_picklemachine.cpp prints
from the symbolic graph. Only plain data is loaded back here (our own trusted values)."""
import argparse
import collections
import os
import pickle


def canon(value):
    if value is None:
        return "None"
    if value is True:
        return "True"
    if value is False:
        return "False"
    if isinstance(value, int):
        return "i" + str(value)
    if isinstance(value, float):
        return "f" + format(value, ".17g")
    if isinstance(value, str):
        return "s" + value.encode("utf-8").hex()
    if isinstance(value, (bytes, bytearray)):
        return "b" + bytes(value).hex()
    if isinstance(value, tuple):
        return "(" + ",".join(canon(v) for v in value) + ")"
    if isinstance(value, list):
        return "[" + ",".join(canon(v) for v in value) + "]"
    if isinstance(value, (set, frozenset)):
        return "{" + ",".join(sorted(canon(v) for v in value)) + "}"
    if isinstance(value, dict):
        return "<" + ",".join(canon(k) + ":" + canon(v) for k, v in value.items()) + ">"
    raise TypeError(type(value))


shared_list = [1, 2, 3]
SAMPLES = {
    "scalars": [None, True, False, 0, 1, -1, 255, 256, 65535, 65536, -2**31, 2**31 - 1, 2**31, 2**63 - 1,
                -2**63, 2**64, -2**64 - 5, 10**40, -10**40, 0.0, -0.0, 1.5, 1e300, -2.5e-300, 3.141592653589793],
    "strings": ["", "a", "cpu", "cuda:0", "ünïcödé", "日本語", "emoji \U0001F600", "quote ' and \" and \\",
                "newline\nand\ttab", "x" * 300, b"", b"\x00\xff bytes", bytearray(b"abc")],
    "containers": {"empty_list": [], "empty_tuple": (), "empty_dict": {}, "t1": (1,), "t2": (1, 2), "t3": (1, 2, 3),
                   "t4": (1, 2, 3, 4), "nested": [[[[]]]], "dict": {"a": 1, 2: "b", (3, 4): [5]},
                   "set": {1, 2, 3}, "frozenset": frozenset({"x", "y"}), "long": list(range(2000))},
    "shared": {"first": shared_list, "second": shared_list, "device": "cpu", "again": "cpu"},
    "state_dict_like": collections.OrderedDict([("layer.0.weight", [0.5, 1.5]), ("layer.0.bias", [0.0])]),
}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)))
    args = parser.parse_args()
    for name, value in SAMPLES.items():
        for protocol in range(0, 6):
            data = pickle.dumps(value, protocol=protocol)
            base = os.path.join(args.out, f"{name}.p{protocol}")
            with open(base + ".pkl", "wb") as f:
                f.write(data)
            # OrderedDict, set (below protocol 4) and bytes (below protocol 3) are REDUCE calls in the
            # pickle; the test's dump knows those few constructors, as torch's loader would.
            with open(base + ".expected", "w") as f:
                f.write(canon(pickle.loads(data)) + "\n")


if __name__ == "__main__":
    main()
