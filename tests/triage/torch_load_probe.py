#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Runs the real torch.load on a list of files and prints what happened, as JSON.

The truth the C++ load simulation and weights_only verdict are compared with. Run once per
interpreter per test (importing torch is slow):

    torch_load_probe.py JOBS.json      (or "-" for stdin)

JOBS.json is a list of {"path": str, "map_location": str|null, "weights_only": true|false|null,
"trusted": bool, "python_path": str|null}. python_path is put first on sys.path for that job only
(a folder holding a user's package, to load whole-model pickles that import it); modules imported
from it are forgotten afterwards. map_location is the Python text MapLocation::python() writes ("'cpu'",
"{'cuda:1': 'cuda:0'}", "torch.device('cpu')"); it is evaluated with only `torch` in scope. A
job that is not trusted (a corpus file: some are hostile on purpose) is refused unless it asks
for weights_only=True explicitly, so that nothing outside the weights-only unpickler ever runs.

Output: a list, one entry per job, in order: {"ok": bool, "type": exception class name,
"error": str(exception), "devices": sorted devices of the loaded tensors}.
"""
import json
import os
import sys
import warnings

# The environment must not change the default being tested (torch-format.md §6.1).
os.environ.pop("TORCH_FORCE_WEIGHTS_ONLY_LOAD", None)
os.environ.pop("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", None)

import torch  # noqa: E402


def devices_of(obj, seen, out):
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, torch.Tensor):
        out.add(str(obj.device))
    elif isinstance(obj, dict):
        for v in obj.values():
            devices_of(v, seen, out)
    elif isinstance(obj, (list, tuple, set)):
        for v in obj:
            devices_of(v, seen, out)


def probe(job):
    path = job["path"]
    weights_only = job.get("weights_only")
    if not job.get("trusted", False) and weights_only is not True:
        return {"ok": False, "type": "Refused", "error": "untrusted file: weights_only=True only"}
    kwargs = {}
    if job.get("map_location") is not None:
        kwargs["map_location"] = eval(job["map_location"], {"torch": torch})  # our own text
    if weights_only is not None:
        kwargs["weights_only"] = weights_only
    python_path = job.get("python_path")
    saved_path, saved_modules = list(sys.path), set(sys.modules)
    if python_path:
        sys.path.insert(0, python_path)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            obj = torch.load(path, **kwargs)
    except BaseException as e:  # noqa: BLE001 - every failure is an answer here
        return {"ok": False, "type": type(e).__name__, "error": str(e)}
    finally:
        sys.path[:] = saved_path
        for name in set(sys.modules) - saved_modules:
            if python_path and getattr(sys.modules[name], "__file__", "") and \
                    str(sys.modules[name].__file__).startswith(python_path):
                del sys.modules[name]
    out = set()
    try:
        if isinstance(obj, torch.nn.Module) or hasattr(obj, "state_dict"):
            for t in list(obj.state_dict().values()):
                out.add(str(t.device))
        else:
            devices_of(obj, set(), out)
    except BaseException:  # noqa: BLE001
        pass
    return {"ok": True, "type": "", "error": "", "devices": sorted(out)}


def main():
    source = sys.stdin if len(sys.argv) < 2 or sys.argv[1] == "-" else open(sys.argv[1])
    jobs = json.load(source)
    results = [probe(job) for job in jobs]
    json.dump({"torch": torch.__version__, "results": results}, sys.stdout)


if __name__ == "__main__":
    main()
