#!/usr/bin/python3
"""Writes the zip samples for tests/core/tst_ziparchive.cpp and what Python's zipfile says about them.

Run with Debian 12's interpreter, which has torch 1.13 (the `python3` on a developer's PATH may not):

    /usr/bin/python3 tests/data/zip/make_zip_samples.py [--out tests/data/zip]

Every sample is written by a real tool: torch.save, torch.jit.save, or Python's zipfile. Nothing
here assembles zip bytes by hand. Beside each sample, `<sample>.json` records what Python's
zipfile reports when it reads the sample back (names, methods, flags, CRCs, sizes, offsets) and
where each record's payload starts according to zipfile's own local-header parsing: the C++ reader
must agree with an independent implementation, not with a copy of itself.

The output is deterministic: tensors are built from fixed values, zip timestamps are fixed, and
torch 1.13 writes no `.data/serialization_id`. The files are committed; regenerating them is not
part of the test run.
"""

import argparse
import io
import json
import os
import sys
import zipfile
import zlib

import torch

FIXED_DATE = (2024, 1, 2, 3, 4, 6)


def torch_state_dict(path):
    """A state dict saved to a path: the archive prefix is the file name without extension."""
    linear = torch.nn.Linear(3, 2)
    with torch.no_grad():
        linear.weight.copy_(torch.arange(6, dtype=torch.float32).reshape(2, 3) / 4)
        linear.bias.copy_(torch.tensor([0.5, -0.5]))
    state = linear.state_dict()
    state["steps"] = torch.tensor(7, dtype=torch.int64)
    state["mask"] = torch.tensor([True, False, True])
    state["half"] = torch.arange(5, dtype=torch.float16)
    torch.save(state, path)
    return "torch.save(state_dict, path) with torch %s" % torch.__version__


def torch_buffer(path):
    """Saved into a buffer, so the prefix is `archive`; two tensors share one storage."""
    base = torch.arange(12, dtype=torch.float64)
    buffer = io.BytesIO()
    torch.save({"base": base, "view": base[4:8], "ints": torch.arange(4, dtype=torch.int32)}, buffer)
    with open(path, "wb") as f:
        f.write(buffer.getvalue())
    return "torch.save(obj, io.BytesIO()) with torch %s" % torch.__version__


def torch_empty_tensor(path):
    """A 0-byte tensor: its record is written without a data descriptor (flags 0x0800)."""
    torch.save({"empty": torch.zeros(0), "after": torch.ones(3), "also_empty": torch.zeros(2, 0)}, path)
    return "torch.save with 0-byte tensors, torch %s" % torch.__version__


class ScriptedModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = torch.nn.Parameter(torch.tensor([1.5, 2.5]))
        self.register_buffer("offset", torch.tensor([0.25, -0.25]))

    def forward(self, x: torch.Tensor, repeats: int = 2) -> torch.Tensor:
        # Long enough that torch.jit.save deflates the code record (it compresses above 200 bytes).
        result = x * self.scale + self.offset
        for step in range(repeats):
            if step % 2 == 0:
                result = torch.relu(result) + self.offset
            else:
                result = torch.tanh(result) * self.scale
        return result.clamp(min=-10.0, max=10.0)


def torchscript_module(path):
    torch.jit.save(torch.jit.script(ScriptedModule()), path)
    return "torch.jit.save(torch.jit.script(module), path) with torch %s" % torch.__version__


def torch_after_prefix(path):
    """torch.save into an open file after other bytes, as torch.distributed.checkpoint does: the
    zip's own offsets count from where the zip starts, not from the start of the file."""
    with open(path, "wb") as f:
        f.write(b"#!/bin/sh\n# 64 bytes of something else before the archive starts\n"[:64].ljust(64, b"#"))
        torch.save({"w": torch.arange(3, dtype=torch.float32)}, f)
    return "64 bytes, then torch.save(obj, open_file) with torch %s" % torch.__version__


def _zip_payloads():
    text = "".join("line %03d: the quick brown fox jumps over the lazy dog\n" % i for i in range(40))
    return [
        ("deflated/text.txt", text.encode()),
        ("deflated/empty.bin", b""),
        ("deflated/bytes.bin", bytes(range(256)) * 3),
    ]


def _zipinfo(name, compress_type):
    info = zipfile.ZipInfo(name, date_time=FIXED_DATE)
    info.compress_type = compress_type
    info.external_attr = 0o644 << 16
    return info


def zipfile_force_zip64(path):
    """zipfile's documented force_zip64: ZIP64 extra fields in the local headers."""
    with zipfile.ZipFile(path, "w") as zf:
        for name, payload in _zip_payloads():
            with zf.open(_zipinfo(name, zipfile.ZIP_DEFLATED), "w", force_zip64=True) as f:
                f.write(payload)
    return "Python %s zipfile, ZIP_DEFLATED, open(..., force_zip64=True)" % sys.version.split()[0]


def zipfile_zip64_everywhere(path):
    """zipfile writes ZIP64 central-directory fields (sizes and offsets of 0xFFFFFFFF resolved from
    the extra field) and the ZIP64 end records only for archives over 4 GiB. Lowering zipfile's
    own limits makes its real ZIP64 code paths run on a few kilobytes."""
    saved = (zipfile.ZIP64_LIMIT, zipfile.ZIP_FILECOUNT_LIMIT)
    zipfile.ZIP64_LIMIT, zipfile.ZIP_FILECOUNT_LIMIT = 16, 1
    try:
        with zipfile.ZipFile(path, "w") as zf:
            for name, payload in _zip_payloads():
                with zf.open(_zipinfo(name, zipfile.ZIP_DEFLATED), "w", force_zip64=True) as f:
                    f.write(payload)
            zf.writestr(_zipinfo("stored/plain.txt", zipfile.ZIP_STORED), b"stored, not deflated\n" * 4)
    finally:
        zipfile.ZIP64_LIMIT, zipfile.ZIP_FILECOUNT_LIMIT = saved
    return ("Python %s zipfile, ZIP_DEFLATED and ZIP_STORED, force_zip64, ZIP64_LIMIT lowered to 16 bytes"
            % sys.version.split()[0])


class _Unseekable(io.RawIOBase):
    def __init__(self, sink):
        self.sink = sink

    def writable(self):
        return True

    def write(self, data):
        self.sink.write(data)
        return len(data)


def zipfile_streamed(path):
    """zipfile writing to a stream it cannot seek: every record gets a data descriptor (bit 3) and
    zero sizes in its local header, as torch's records do."""
    sink = io.BytesIO()
    with zipfile.ZipFile(_Unseekable(sink), "w") as zf:
        for name, payload in _zip_payloads():
            zf.writestr(_zipinfo(name, zipfile.ZIP_DEFLATED), payload)
        zf.writestr(_zipinfo("stored/plain.txt", zipfile.ZIP_STORED), b"stored, not deflated\n" * 4)
    with open(path, "wb") as f:
        f.write(sink.getvalue())
    return "Python %s zipfile writing to an unseekable stream (data descriptors)" % sys.version.split()[0]


def zipfile_appended(path):
    """zipfile's mode 'a' on a file that is not a zip appends an archive to it (the self-extracting
    archive recipe); unlike torch_after_prefix.bin, the offsets inside count from the file's start."""
    with open(path, "wb") as f:
        f.write(b"#!/bin/sh\necho 'this script carries a zip archive after it'\nexit 0\n")
    with zipfile.ZipFile(path, "a") as zf:
        for name, payload in _zip_payloads():
            zf.writestr(_zipinfo(name, zipfile.ZIP_DEFLATED), payload)
    return "a shell script, then Python %s zipfile mode 'a'" % sys.version.split()[0]


def zipfile_duplicate_names(path):
    """zipfile warns about a repeated name but writes it: two records named the same."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with zipfile.ZipFile(path, "w") as zf:
            zf.writestr(_zipinfo("archive/data.pkl", zipfile.ZIP_STORED), b"first")
            zf.writestr(_zipinfo("archive/version", zipfile.ZIP_STORED), b"3\n")
            zf.writestr(_zipinfo("archive/data.pkl", zipfile.ZIP_STORED), b"second, longer")
    return "Python %s zipfile, writestr twice with the same name" % sys.version.split()[0]


SAMPLES = [
    ("torch_state_dict.pt", torch_state_dict, True),
    ("torch_buffer.pt", torch_buffer, True),
    ("torch_empty_tensor.pt", torch_empty_tensor, True),
    ("torchscript_module.pt", torchscript_module, True),
    ("torch_after_prefix.bin", torch_after_prefix, True),
    ("zipfile_force_zip64.zip", zipfile_force_zip64, False),
    ("zipfile_zip64_everywhere.zip", zipfile_zip64_everywhere, False),
    ("zipfile_streamed.zip", zipfile_streamed, False),
    ("zipfile_appended.zip", zipfile_appended, False),
    ("zipfile_duplicate_names.zip", zipfile_duplicate_names, False),
]


def describe(path, writer, torch_written):
    size = os.path.getsize(path)
    with open(path, "rb") as raw:
        data = raw.read()
    entries = []
    with zipfile.ZipFile(path) as zf:
        infos = zf.infolist()
        # zipfile already corrects offsets for bytes before the archive ("concat"), so these are
        # offsets in the file.
        starts = sorted(info.header_offset for info in infos) + [zf.start_dir]
        for info in infos:
            with zf.open(info) as member:
                # zipfile has read the local header and stands at the first payload byte.
                data_offset = member._fileobj.tell()
            payload = zf.read(info)  # zipfile checks the CRC here
            record_end = min(start for start in starts if start > info.header_offset)
            entries.append({
                "name": info.filename,
                "method": info.compress_type,
                "flags": info.flag_bits,
                "crc32": info.CRC,
                "compressed_size": info.compress_size,
                "uncompressed_size": info.file_size,
                "local_header_offset": info.header_offset,
                "data_offset": data_offset,
                # Where the next record (or the central directory) starts: this record, its data
                # descriptor included, lies before it. Truncation tests expect every record whose
                # end is at or before the cut to be recovered complete.
                "record_end": record_end,
                "payload_crc32": zlib.crc32(payload) & 0xFFFFFFFF,
            })
    archive_start = data.find(b"PK\x03\x04")
    names = [entry["name"] for entry in entries]
    return {
        "duplicate_names": sorted({name for name in names if names.count(name) > 1}),
        "file": os.path.basename(path),
        "writer": writer,
        "torch_written": torch_written,
        "size": size,
        "archive_start": archive_start,
        "central_directory_offset": starts[-1],
        "entries": entries,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)))
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name, make, torch_written in SAMPLES:
        path = os.path.join(args.out, name)
        writer = make(path)
        expectation = describe(path, writer, torch_written)
        with open(path + ".json", "w") as f:
            json.dump(expectation, f, indent=1, sort_keys=True)
            f.write("\n")
        print("%-32s %6d bytes, %d records" % (name, expectation["size"], len(expectation["entries"])))


if __name__ == "__main__":
    main()
