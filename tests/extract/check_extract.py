# SPDX-License-Identifier: MIT
"""Judges a state_dict written by `ckpt-inspect extract` with the torch running this script.

usage: check_extract.py OUT.pt EXPECTED.json [--names-from KEY] [--device TAG]

Loads OUT.pt with torch.load(weights_only=True) (nothing else is allowed to run), recording the
location torch reads for every storage, and compares with EXPECTED.json (written by torch when the
fixture was made, tests/extract/make_rescue_fixtures.py): the same names in the same order, dtype,
shape, stride, storage offset, the SHA-256 of every storage's bytes, and the same sharing of
storages. --device: every storage must be recorded on TAG (default cpu). Prints 'ok' or the
differences and exits 1.
"""
import collections
import hashlib
import json
import sys

import torch


def untyped_storage(t):
    return t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage().untyped()


def main():
    args = sys.argv[1:]
    out, expected_path = args[0], args[1]
    device = "cpu"
    if "--device" in args:
        device = args[args.index("--device") + 1]
    expected = json.load(open(expected_path))
    locations = []

    def map_location(storage, location):
        locations.append(location)
        return storage

    loaded = torch.load(out, map_location=map_location, weights_only=True)
    problems = []
    if not isinstance(loaded, collections.OrderedDict):
        problems.append("loaded a %s, not an OrderedDict" % type(loaded).__name__)
    names = list(loaded.keys())
    want_names = [t["name"] for t in expected["tensors"]]
    if names != want_names:
        problems.append("names differ:\n  got  %s\n  want %s" % (names, want_names))
    for want in expected["tensors"]:
        t = loaded.get(want["name"])
        if t is None:
            continue
        got = {
            "dtype": str(t.dtype).replace("torch.", ""),
            "shape": list(t.shape),
            "stride": list(t.stride()),
            "storage_offset": t.storage_offset(),
            "storage_sha256": hashlib.sha256(bytes(untyped_storage(t).tolist())).hexdigest(),
        }
        for key, value in got.items():
            if want[key] != value:
                problems.append("%s: %s is %s, torch wrote %s" % (want["name"], key, value, want[key]))
        if t.requires_grad or type(t) is not torch.Tensor:
            problems.append("%s is a %s (requires_grad=%s), not a plain tensor" % (
                want["name"], type(t).__name__, t.requires_grad))
    groups = collections.defaultdict(list)
    for name, t in loaded.items():
        groups[untyped_storage(t).data_ptr()].append(name)
    shared = sorted(sorted(g) for g in groups.values() if len(g) > 1)
    want_shared = sorted(sorted(g) for g in expected["shared"])
    if shared != want_shared:
        problems.append("storage sharing differs:\n  got  %s\n  want %s" % (shared, want_shared))
    if set(locations) != {device}:
        problems.append("storages recorded on %s, expected all on %s" % (sorted(set(locations)), device))
    if problems:
        print("\n".join(problems))
        sys.exit(1)
    print("ok %s: %d tensors, %d storages" % (torch.__version__, len(names), len(locations)))


if __name__ == "__main__":
    main()
