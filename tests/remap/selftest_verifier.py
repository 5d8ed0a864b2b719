#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Proves that verify_remap.py is not vacuous: it must pass an honest copy and fail copies with
the defects a remap writer could have. Each copy is written with torch's own zip writer
(torch._C.PyTorchFileWriter, so the framing is torch.save's) from one of our torch 1.13 fixtures.

Usage: /usr/bin/python3 tests/remap/selftest_verifier.py   (torch 1.13; exit 0 when every
tampered copy is caught and the honest copy passes)
"""

import contextlib
import io
import json
import os
import pickletools
import re
import shutil
import sys
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import verify_remap as vr  # noqa: E402

FIXTURES = os.path.normpath(os.path.join(HERE, "..", "fixtures", "torch-1.13"))


def records(path):
    with zipfile.ZipFile(path) as z:
        prefix = z.namelist()[0].split("/", 1)[0]
        return prefix, [(n.split("/", 1)[1], z.read(n)) for n in z.namelist()]


def write_copy(src, folder, change=None, order=None):
    """Rewrite `src` into folder/<same name> with torch's writer; `change(name, data)` may
    return new bytes for a record; `order` may reorder the record list."""
    import torch
    dst = os.path.join(folder, os.path.basename(src))
    _, recs = records(src)
    if order:
        recs = order(recs)
    writer = torch._C.PyTorchFileWriter(dst)
    for name, data in recs:
        if change:
            data = change(name, data)
        writer.write_record(name, data, len(data))
    writer.write_end_of_file()
    del writer
    return dst


def summary(original, remapped, planned=None):
    a = vr.Archive(original)
    rows = []
    for sid, info in a.storages.items():
        rows.append({"key": info["key"], "output_key": info["key"], "recorded": info["location"],
                     "planned": planned or info["location"]})
    path = remapped + ".json"
    with open(path, "w") as f:
        json.dump({"input": original, "output": remapped, "format": a.format, "storages": rows,
                   "records_copied": 0, "bytes_written": os.path.getsize(remapped), "seconds": 0,
                   "verified": True}, f)
    return path


def run(original, remapped, summary_path):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = vr.verify(original, [vr.Case(remapped, summary_path, None)], trusted=True)
    return status, out.getvalue()


def reemit_with_text_put(data):
    """Same pickle, but memo writes as PUT (text) opcodes: loads normally, not weights-only."""
    out = bytearray()
    ops = list(pickletools.genops(data))
    for i, (op, arg, pos) in enumerate(ops):
        end = ops[i + 1][2] if i + 1 < len(ops) else len(data)
        if op.name in ("BINPUT", "LONG_BINPUT"):
            out += b"p%d\n" % arg
        else:
            out += data[pos:end]
    return bytes(out)


def main():
    failures = 0
    tmp = tempfile.mkdtemp(prefix="verify-remap-selftest-")
    try:
        def case(label, fixture, want_fail, patterns, change=None, order=None, planned=None):
            nonlocal failures
            folder = os.path.join(tmp, label)
            os.makedirs(folder)
            original = os.path.join(FIXTURES, fixture)
            remapped = write_copy(original, folder, change, order)
            status, text = run(original, remapped, summary(original, remapped, planned))
            ok = (status != 0) == want_fail and all(re.search(p, text) for p in patterns)
            print("%s %-28s %s" % ("ok  " if ok else "FAIL", label,
                                   "caught" if want_fail else "passes"))
            if not ok:
                failures += 1
                print("    status %d, wanted %s matching %s; verifier said:\n%s" % (
                    status, "failure" if want_fail else "success", patterns,
                    "\n".join("      " + ln for ln in text.splitlines())))

        # An honest copy (same records through torch's writer) passes.
        case("honest-copy", "memo_hazard_cuda0.pt", False, [r"^ok "])
        case("honest-copy-views", "views_and_strides.pt", False, [r"^ok "])

        # Patching the memo-shared 'cuda:0' literal moves the tensors AND the user's string.
        def naive_patch(name, data):
            if name == "data.pkl":
                return data.replace(b"X\x06\x00\x00\x00cuda:0", b"X\x03\x00\x00\x00cpu")
            return data
        case("memo-hazard-byte-patch", "memo_hazard_cuda0.pt", True,
             [r"device: 'cuda:0' in the input, 'cpu' in the output", r"\[pickle\]"],
             change=naive_patch, planned="cpu")

        # A storage byte changed.
        def flip(name, data):
            if name == "data/0":
                return bytes([data[0] ^ 0x40]) + data[1:]
            return data
        case("storage-byte-flipped", "state_dict.pt", True,
             [r"data/0: bytes differ", r"storage bytes differ"], change=flip)

        # Tags not what the summary planned (file still says cuda:0, plan says cpu).
        case("tag-not-planned", "devices_cuda0.pt", True,
             [r"recorded on 'cuda:0' in the output, planned 'cpu'",
              r"torch sees tag 'cuda:0', planned 'cpu'", r"plain torch.load"],
             planned="cpu")

        # Records reordered.
        def swap(recs):
            i = [n for n, _ in recs].index("data/0")
            j = [n for n, _ in recs].index("data/1")
            recs[i], recs[j] = recs[j], recs[i]
            return recs
        case("records-reordered", "state_dict.pt", True, [r"record names/order differ"], order=swap)

        # A pickle that only a full unpickler accepts: weights_only regression.
        def text_put(name, data):
            return reemit_with_text_put(data) if name == "data.pkl" else data
        case("weights-only-lost", "state_dict.pt", True,
             [r"ORIGINAL loads with weights_only=True, REMAPPED does not"], change=text_put)

        # Geometry changed: the view 'row1' (= t[1], storage_offset 6) moved by one element.
        def shift_offset(name, data):
            if name == "data.pkl":
                assert data.count(b"QK\x06K\x06\x85") == 1
                return data.replace(b"QK\x06K\x06\x85", b"QK\x05K\x06\x85")
            return data
        case("view-offset-changed", "views_and_strides.pt", True, [r"storage_offset"],
             change=shift_offset)

        # Legacy input: torch itself converts the legacy fixture to the zip format (keys become
        # "0", "1", ... in first-use order, every storage on the CPU), the summary says which key
        # became which; then one storage byte is flipped in a second conversion.
        def legacy_case(label, want_fail, patterns, flip_byte):
            nonlocal failures
            import torch
            folder = os.path.join(tmp, label)
            os.makedirs(folder)
            original = os.path.join(FIXTURES, "legacy_state_dict.pt")
            obj = torch.load(original, map_location="cpu", weights_only=True)
            remapped = os.path.join(folder, "legacy_state_dict.pt")
            torch.save(obj, remapped)
            if flip_byte:
                prefix, recs = records(remapped)
                os.remove(remapped)
                writer = torch._C.PyTorchFileWriter(remapped)
                for name, data in recs:
                    if name == "data/1":
                        data = bytes([data[0] ^ 1]) + data[1:]
                    writer.write_record(name, data, len(data))
                writer.write_end_of_file()
                del writer
            a = vr.Archive(original)
            rows = [{"key": info["key"], "output_key": str(i), "recorded": info["location"],
                     "planned": "cpu"} for i, info in enumerate(a.storages.values())]
            summary_path = remapped + ".json"
            with open(summary_path, "w") as f:
                json.dump({"input": original, "output": remapped, "format": "torch-legacy",
                           "storages": rows, "bytes_written": os.path.getsize(remapped),
                           "verified": True}, f)
            status, text = run(original, remapped, summary_path)
            ok = (status != 0) == want_fail and all(re.search(p, text) for p in patterns)
            print("%s %-28s %s" % ("ok  " if ok else "FAIL", label, "caught" if want_fail else "passes"))
            if not ok:
                failures += 1
                print("    status %d; verifier said:\n%s" % (
                    status, "\n".join("      " + ln for ln in text.splitlines())))

        legacy_case("legacy-converted-by-torch", False, [r"^ok "], False)
        legacy_case("legacy-storage-byte-flipped", True,
                    [r"data/1 differs from legacy storage", r"storage bytes differ"], True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("%s: %d self-test failure(s)" % ("FAILED" if failures else "ok", failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
