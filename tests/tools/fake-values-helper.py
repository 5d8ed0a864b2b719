#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# A stand-in for ckpt-inspect-values that speaks its protocol (core/tasks/valueshelper.h: one JSON
# document, one array element a line) without libtorch, for the tests of how both faces find and
# read the helper (CKPT_VALUES_HELPER=this script). It makes things up; it never opens the file.
#
#   FAKE_VALUES_FAIL=TEXT   write TEXT on stderr and exit with status 3
#   FAKE_VALUES_BYTES=N     after the tensor holding NaN, finite tensors until the answer passes N bytes
#   FAKE_VALUES_SLEEP=S     with --progress, wait S seconds after the first progress line (a long scan to cancel)
#
# Scan modes ([--tensor=I] [--progress] [--crc] FILE): tensor 0, "bad", holds 2 NaN, 1 +Inf and
# 0 -Inf of its 10 values. --diff A B: every pair read on stdin measured as 4 values, 1 differing,
# max_abs 0.5, max_rel 0.25.
import json
import os
import sys

if os.environ.get("FAKE_VALUES_FAIL"):
    sys.stderr.write(os.environ["FAKE_VALUES_FAIL"] + "\n")
    sys.exit(3)

args = sys.argv[1:]
out = sys.stdout
if args and args[0] == "--diff":
    pairs = sys.stdin.read().split()
    lines = []
    for a, b in zip(pairs[0::2], pairs[1::2]):
        lines.append(json.dumps({"a": int(a), "b": int(b), "count": 4, "differing": 1, "max_abs": 0.5,
                                 "max_rel": 0.25}, separators=(",", ":")))
    out.write('{"pairs":[\n' + ",\n".join(lines) + "\n]}\n")
    sys.exit(0)

progress = "--progress" in args
if progress:
    sys.stderr.write("progress 0 100\n")
    sys.stderr.flush()
    if os.environ.get("FAKE_VALUES_SLEEP"):
        import time
        time.sleep(float(os.environ["FAKE_VALUES_SLEEP"]))
counts = [0] * 64
counts[10] = 7
bad = {"index": 0, "name": "bad", "domain": "values", "count": 10, "nan": 2, "posinf": 1, "neginf": 0,
       "zeros": 0, "finite": 7, "copied": False, "min": -1.5, "max": 2.5, "mean": 0.25, "std": 1.0,
       "histogram": {"low": -1.5, "high": 2.5, "counts": counts}}
lines = [json.dumps(bad, separators=(",", ":"))]
target = int(os.environ.get("FAKE_VALUES_BYTES", "0"))
if target:
    big = [1234567 + i for i in range(64)]
    template = json.dumps({"index": 999999, "name": "filler.999999", "domain": "values", "count": 79012352,
                           "nan": 0, "posinf": 0, "neginf": 0, "zeros": 0, "finite": 79012352,
                           "copied": False, "min": -4.160720348358154, "max": 4.239935874938965,
                           "mean": -0.00020242885102250707, "std": 1.001569490670807,
                           "histogram": {"low": -4.160720348358154, "high": 4.239935874938965,
                                         "counts": big}}, separators=(",", ":"))
    size = len(lines[0])
    index = 1
    while size <= target:
        line = template.replace("999999", str(index))
        lines.append(line)
        size += len(line) + 2
        index += 1
out.write('{"file":' + json.dumps(args[-1] if args else "") + ',"tensors":[\n' + ",\n".join(lines) + "\n]")
if "--crc" in args:
    out.write(',"crcs":[\n]')
out.write("}\n")
if progress:
    sys.stderr.write("progress 100 100\n")
