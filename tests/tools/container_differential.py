#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The container differential (issue 24): real readers against this tool's safety verdict.

Mutated torch zips (written by real torch 1.13's torch.save, then mutated: names, duplicate members,
extra end records, ZIP64 locators, comments, flag bits, central directories that only one reader
finds), legacy streams, 0.1.x tars, .npy/.npz and look-alikes are handed to the real readers, which
say which bytes they would give an unpickler:

  - torch's C++ reader, torch._C.PyTorchFileReader(path).get_record(name): torch 1.13 here
    (/usr/bin/python3), torch 2.x in the sid root (tests/tools/modern-python, one server process);
  - Python's zipfile and tarfile (3.11 here, the sid root's 3.14 there), every member;
  - numpy.lib.format.read_magic / read_array_header_1_0 / _2_0 (the header only) for object arrays;
  - torch.load's legacy stream: its five stacked pickles from byte 0 (ends found by pickletools).

Whether a reader's bytes matter is judged by CPython's own C unpickler made inert, in a child
process with a memory limit and a timeout: its find_class records the name and returns a stub class
(nothing is imported), persistent_load returns a stub, every EXT code in the bytes is mapped to a
recorded stub. Bytes whose unpickling looks up a callable (of a module that is a dotted identifier)
must be among the pickles `ckpt-inspect check --json` rated (its safety section's "pickle_bytes":
length and CRC-32 of each rated pickle's bytes), read to the same STOP, or rated "not read to its
end" in a verdict that is "dangerous"; a member the tool says it cannot unpack or decrypt is named
in its "cannot verify" list. And when the bytes look up os.system, the verdict must name it.

usage: container_differential.py CKPT_INSPECT [--seed N] [--cases N | --minutes M] [--out DIR]
                                 [--modern CMD] [--quiet]
Exit status: 0 when every case agrees, 1 on a disagreement (each one is kept in --out).
"""
import argparse
import base64
import io
import json
import os
import pickletools
import random
import shutil
import struct
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
import zlib

MARKER = "touch /tmp/ckpt-container-differential-marker"
CALLABLE_OPS = {"GLOBAL", "STACK_GLOBAL", "INST", "EXT1", "EXT2", "EXT4"}


# ---- pickle bytes, built opcode by opcode ---------------------------------------------------------
def GLOBAL(module, name):
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def BINUNICODE(text):
    data = text.encode()
    return b"X" + struct.pack("<I", len(data)) + data


def SHORT(text):
    data = text.encode()
    return b"\x8c" + bytes([len(data)]) + data


def payload(kind=0):
    """A pickle that calls os.system(MARKER): never run, only rated."""
    if kind == 1:  # protocol 4, STACK_GLOBAL
        return b"\x80\x04" + SHORT("os") + SHORT("system") + b"\x93" + SHORT(MARKER) + b"\x85R."
    if kind == 2:  # broken after the call
        return b"\x80\x02" + GLOBAL("os", "system") + BINUNICODE(MARKER) + b"\x85R\xff\xff"
    if kind == 3:  # protocol 0 text
        return GLOBAL("os", "system") + b"(S'" + MARKER.encode() + b"'\ntR."
    return b"\x80\x02" + GLOBAL("os", "system") + BINUNICODE(MARKER) + b"\x85R."


def benign_pickle():
    return b"\x80\x02}" + BINUNICODE("epoch") + b"K\x03s."


def pickle_facts(data):
    """(end, calls, names): where the walk stopped (one past STOP, or None when it failed first),
    whether it met a callable look-up first, and the GLOBAL/STACK_GLOBAL names it saw."""
    calls, names, strings, end = False, [], [], None
    pushed = 0
    try:
        for op, arg, pos in pickletools.genops(io.BytesIO(data)):
            # (STACK_GLOBAL takes two strings off the stack: with fewer opcodes before it, it fails.)
            if op.name == "PROTO" and arg > 5:  # "unsupported pickle protocol": nothing runs
                break
            if op.name in CALLABLE_OPS and (op.name != "STACK_GLOBAL" or pushed >= 2):
                calls = True
            if op.name not in ("PROTO", "FRAME"):
                pushed += 1
            if op.name in ("GLOBAL", "INST") and isinstance(arg, str):
                names.append(arg.replace(" ", "."))
            if op.name == "STACK_GLOBAL" and len(strings) >= 2:
                names.append(strings[-2] + "." + strings[-1])
            if isinstance(arg, str) and op.name not in ("GLOBAL", "INST"):
                strings.append(arg)
            if op.name == "STOP":
                end = pos + 1
                break
    except Exception:  # noqa: BLE001 - genops raises ValueError and others on junk
        pass
    return end, calls, names


# ---- the judge of a byte string: CPython's own unpickler, made inert ---------------------------------
# Whether bytes reach a callable look-up is decided by CPython's C unpickler itself, in a child
# process with a memory limit and a timeout, whose find_class records the name and returns a stub
# class (nothing is imported), whose persistent_load returns a stub, and whose copyreg extension
# registry maps every EXT code in the bytes to a recorded stub name. pickletools.genops alone has no
# stack, so it would count look-ups CPython never reaches (STACK_GLOBAL after a failed OBJ).
JUDGE = r"""
import base64, copyreg, io, json, pickle, pickletools, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
class Stub:
    def __new__(cls, *args, **kwargs):
        return object.__new__(cls)
    def __init__(self, *args, **kwargs):
        pass
    def __setstate__(self, state):
        pass
    def __call__(self, *args, **kwargs):
        return Stub()
    def __setitem__(self, key, value):
        pass
    def append(self, value):
        pass
    def extend(self, values):
        pass
    def add(self, value):
        pass
class Recorder(pickle.Unpickler):
    def find_class(self, module, name):
        # CPython's find_class imports `module` first: a name that is no dotted identifier is no
        # module a file on sys.path provides (one with a NUL cannot even be asked for).
        if all(part.isidentifier() for part in module.split(".")):
            self.looked_up.append(module + "." + name)
        return Stub
    def persistent_load(self, pid):
        return Stub()
for line in sys.stdin:
    data = base64.b64decode(line)
    try:
        for op, arg, _ in pickletools.genops(io.BytesIO(data)):
            if op.name.startswith("EXT"):
                copyreg._inverted_registry[arg] = ("copyreg_extension", "code_%d" % arg)
            if op.name == "STOP":
                break
    except Exception:
        pass
    f = io.BytesIO(data)
    r = Recorder(f)
    r.looked_up = []
    end, error = None, None
    try:
        r.load()
        end = f.tell()
    except BaseException as e:
        error = type(e).__name__
    copyreg._inverted_registry.clear()
    copyreg._extension_cache.clear()
    sys.stdout.write(json.dumps({"calls": r.looked_up, "end": end, "error": error}) + "\n")
    sys.stdout.flush()
"""


class Judge:
    def __init__(self):
        self.proc = None
        self.cache = {}

    def start(self):
        self.proc = subprocess.Popen([sys.executable, "-c", JUDGE], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True)

    def facts(self, data):
        """(end, calls, names) as CPython's unpickler finds them."""
        key = zlib.crc32(data), len(data)
        if key in self.cache:
            return self.cache[key]
        import select
        for _ in range(2):
            if not self.proc or self.proc.poll() is not None:
                self.start()
            try:
                self.proc.stdin.write(base64.b64encode(data).decode() + "\n")
                self.proc.stdin.flush()
                ready, _, _ = select.select([self.proc.stdout], [], [], 10)
                if ready:
                    line = self.proc.stdout.readline()
                    if line:
                        answer = json.loads(line)
                        result = (answer["end"], bool(answer["calls"]), answer["calls"])
                        self.cache[key] = result
                        return result
            except (BrokenPipeError, OSError, ValueError):
                pass
            self.proc.kill()  # a hang or a crash: count it as a look-up (never assume nothing ran)
            self.proc = None
        result = (None, True, [])
        self.cache[key] = result
        return result


JUDGE_PROCESS = Judge()


# ---- the real readers: which bytes each would hand to an unpickler ---------------------------------
ELEMENT_SIZE = {"DoubleStorage": 8, "FloatStorage": 4, "HalfStorage": 2, "LongStorage": 8, "IntStorage": 4,
                "ShortStorage": 2, "CharStorage": 1, "ByteStorage": 1, "BoolStorage": 1, "BFloat16Storage": 2,
                "ComplexDoubleStorage": 16, "ComplexFloatStorage": 8}


def small_int(data):
    """The int a tiny pickle (PROTO? BININT*/INT STOP) holds, without unpickling it."""
    try:
        for op, arg, _ in pickletools.genops(io.BytesIO(data)):
            if op.name in ("BININT", "BININT1", "BININT2", "INT", "LONG1", "LONG") and isinstance(arg, int):
                return arg
    except Exception:  # noqa: BLE001
        pass
    return None


def legacy_tar_member_pickles(name, data):
    """Offsets of the pickles torch's 0.1.x loader reads from a tar member (torch-format.md)."""
    offsets = [0]
    end, _, _ = pickle_facts(data)
    if end is None or name not in ("storages", "tensors"):
        return offsets
    count = small_int(data[:end])
    at = end
    for _ in range(min(count or 0, 64)):
        offsets.append(at)
        end, _, names = pickle_facts(data[at:])
        if end is None:
            return offsets
        at += end
        if name == "storages":
            kind = next((n.rsplit(".", 1)[-1] for n in names if n.endswith("Storage")), None)
            if kind not in ELEMENT_SIZE or at + 8 > len(data):
                return offsets
            at += 8 + struct.unpack("<q", data[at:at + 8])[0] * ELEMENT_SIZE[kind]
        else:
            if at + 8 > len(data):
                return offsets
            ndim = struct.unpack("<i", data[at:at + 4])[0]
            at += 8 + 16 * max(ndim, 0) + 8
    if name == "storages":
        offsets.append(at)  # storage_views
    return [o for o in offsets if o <= len(data)]


def npy_pickle(data):
    """The bytes numpy.load(allow_pickle=True) unpickles from an .npy (header read by numpy only)."""
    import numpy.lib.format as fmt
    f = io.BytesIO(data)
    try:
        version = fmt.read_magic(f)
        if version == (1, 0):
            header = fmt.read_array_header_1_0(f)
        elif version == (2, 0):
            header = fmt.read_array_header_2_0(f)
        else:
            header = fmt._read_array_header(f, version)
    except Exception:  # noqa: BLE001 - not an .npy numpy would read
        return None
    return data[f.tell():] if header[2].hasobject else None


def inflated_members(data):
    """What raw deflate makes of the bytes after every local header in data that names method 8
    (the one compression torch's reader inflates), as far as each stream goes."""
    outputs = []
    at = data.find(b"PK\x03\x04")
    while at >= 0 and at + 30 <= len(data):
        method, name_length, extra_length = struct.unpack_from("<H", data, at + 8)[0], *struct.unpack_from(
            "<HH", data, at + 26)
        if method == 8:
            try:
                outputs.append(zlib.decompressobj(-15).decompress(data[at + 30 + name_length + extra_length:]))
            except zlib.error:
                pass
        at = data.find(b"PK\x03\x04", at + 4)
    return outputs


def reader_views(path):
    """[(reader, what, bytes)] for every byte string a real reader would hand to an unpickler."""
    with open(path, "rb") as f:
        data = f.read()
    tag = "python %d.%d" % sys.version_info[:2]
    views = []
    try:
        import torch
        reader = torch._C.PyTorchFileReader(path)
        names = {"data.pkl"}
        try:
            names.update(reader.get_all_records())
        except Exception:  # noqa: BLE001 - mixed prefixes: torch still reads data.pkl
            pass
        for name in sorted(names):
            try:
                blob = bytes(reader.get_record(name))
                # The same record from a fresh reader, read first: an unfilled buffer holds other
                # heap contents there (often the record read just before it, so also file bytes).
                if bytes(torch._C.PyTorchFileReader(path).get_record(name)) != blob:
                    continue
                if blob not in data and not any(out.startswith(blob) for out in inflated_members(data)):
                    # Some broken headers make torch hand on a buffer it never filled (heap contents):
                    # not bytes of the file nor of any deflated member in it. Two reads of such a
                    # buffer can agree (the same freed block reused, once a pickle of the case
                    # before: seed 1795820507, case 3666), so only the file itself says what is real.
                    continue
                views.append(("torch %s reader" % torch.__version__, "record %r" % name, blob))
            except Exception:  # noqa: BLE001
                pass
    except Exception:  # noqa: BLE001 - not an archive torch opens
        pass
    try:
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                what = "member %r" % info.filename
                try:
                    try:
                        member = archive.open(info)
                    except RuntimeError:  # encrypted: a script that knows the password
                        member = archive.open(info, pwd=b"secret")
                        what += " (decrypted with the password)"
                    with member:
                        member._expected_crc = None  # pickle.load(archive.open(...)) runs before the CRC check
                        blob = member.read()
                except Exception:  # noqa: BLE001 - unsupported, broken, another password
                    continue
                views.append((tag + " zipfile", what, blob))
                inner = npy_pickle(blob)
                if inner is not None:
                    views.append((tag + " zipfile+numpy", "npz member %r" % info.filename, inner))
    except Exception:  # noqa: BLE001
        pass
    try:
        with tarfile.open(path, "r:") as archive:
            for info in archive.getmembers():
                try:
                    handle = archive.extractfile(info)
                    blob = handle.read() if handle else None
                except Exception:  # noqa: BLE001
                    blob = None
                if blob is None:
                    continue
                for offset in legacy_tar_member_pickles(info.name, blob):
                    views.append((tag + " tarfile", "member %r at %d" % (info.name, offset), blob[offset:]))
    except Exception:  # noqa: BLE001
        pass
    inner = npy_pickle(data)
    if inner is not None:
        views.append(("numpy", ".npy object array", inner))
    # torch.load of a file that is not a zip (and numpy.load of one that is neither .npy nor .npz):
    # stacked pickles from byte 0 (magic number, protocol, sys_info, the main one, the key list).
    if SERVING:  # torch.load's legacy stream is the same bytes in every torch: the caller's side has it
        return views
    at = 0
    for index in range(5):
        views.append(("torch.load legacy", "pickle %d at %d" % (index + 1, at), data[at:]))
        end, _, _ = JUDGE_PROCESS.facts(data[at:])
        if end is None:
            break
        at += end
    return views


SERVING = False


def serve():
    """Server mode (run by modern-python): one path per line in, one JSON line of views out."""
    global SERVING
    SERVING = True
    for line in sys.stdin:
        path = line.rstrip("\n")
        views = [{"reader": r, "what": w, "b64": base64.b64encode(b).decode()} for r, w, b in reader_views(path)]
        sys.stdout.write(json.dumps(views) + "\n")
        sys.stdout.flush()


# ---- zips built by hand, so every field can lie ---------------------------------------------------
class Entry:
    def __init__(self, name, data, method=0, flags=0, local_name=None, bad_crc=False, central_extra=b"",
                 local_extra=b"", local_flags=None, in_central=True, encrypt=False):
        self.encrypt = encrypt
        self.name, self.data, self.method, self.flags = name, data, method, flags
        self.local_name = name if local_name is None else local_name
        self.bad_crc, self.central_extra, self.local_extra = bad_crc, central_extra, local_extra
        self.local_flags = flags if local_flags is None else local_flags
        self.in_central = in_central


def zipcrypto(data, password=b"secret", check=0):
    """Traditional PKWARE encryption (what zipfile decrypts given pwd=): a 12-byte header, then data."""
    keys = [0x12345678, 0x23456789, 0x34567890]

    def crc(c, b):
        return zlib.crc32(bytes([b]), c ^ 0xFFFFFFFF) ^ 0xFFFFFFFF

    def update(b):
        keys[0] = crc(keys[0], b)
        keys[1] = (keys[1] + (keys[0] & 0xFF)) & 0xFFFFFFFF
        keys[1] = (keys[1] * 134775813 + 1) & 0xFFFFFFFF
        keys[2] = crc(keys[2], keys[1] >> 24)

    for b in password:
        update(b)
    out = bytearray()
    for b in bytes(11) + bytes([check]) + data:
        k = keys[2] | 2
        out.append(b ^ (((k * (k ^ 1)) >> 8) & 0xFF))
        update(b)
    return bytes(out)


def compress(data, method, encrypt=False):
    if encrypt:
        return zipcrypto(compress(data, method), check=zlib.crc32(data) >> 24)
    if method == 8:
        c = zlib.compressobj(6, zlib.DEFLATED, -15)
        return c.compress(data) + c.flush()
    if method == 12:
        import bz2
        return bz2.compress(data)
    if method == 14:
        import lzma
        props = lzma._encode_filter_properties({"id": lzma.FILTER_LZMA1})
        c = lzma.LZMACompressor(lzma.FORMAT_RAW, filters=[lzma._decode_filter_properties(lzma.FILTER_LZMA1, props)])
        return struct.pack("<BBH", 9, 4, len(props)) + props + c.compress(data) + c.flush()
    return data


def local_header(e, comp):
    crc = 0x12345678 if e.bad_crc else zlib.crc32(e.data)
    name = e.local_name.encode("utf-8", "surrogateescape") if isinstance(e.local_name, str) else e.local_name
    return struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, e.local_flags, e.method, 0, 0x21, crc, len(comp),
                       len(e.data), len(name), len(e.local_extra)) + name + e.local_extra


def central_header(e, comp, offset):
    crc = 0x12345678 if e.bad_crc else zlib.crc32(e.data)
    name = e.name.encode("utf-8", "surrogateescape") if isinstance(e.name, str) else e.name
    return struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, e.flags, e.method, 0, 0x21, crc, len(comp),
                       len(e.data), len(name), len(e.central_extra), 0, 0, 0, 0, offset) + name + e.central_extra


def eocd(count, size, offset, comment=b"", comment_length=None):
    return struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, count, count, size, offset,
                       len(comment) if comment_length is None else comment_length) + comment


def zip64_tail(count, size, offset, reloff):
    record = struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0, count, count, size, offset)
    return record, struct.pack("<IIQI", 0x07064B50, 0, reloff, 1)


def build_zip(entries, prefix=b"", relative=False):
    """(bytes, central directory bytes, central start, count) of a plain archive after `prefix`;
    offsets absolute, or relative to the archive's start like a zip with data put in front."""
    out = bytearray(prefix)
    central = bytearray()
    count = 0
    base = len(prefix) if relative else 0
    for e in entries:
        comp = compress(e.data, e.method, e.encrypt)
        at = len(out)
        out += local_header(e, comp) + comp
        if e.in_central:
            central += central_header(e, comp, at - base)
            count += 1
    return out, central, count


def finish(out, central, count, base=0, comment=b""):
    start = len(out)
    return bytes(out + central + eocd(count, len(central), start - base, comment))


# ---- the cases --------------------------------------------------------------------------------------
class Bases:
    """Benign files written by the real writers (torch 1.13 here)."""

    def __init__(self, scratch):
        import numpy
        import torch
        buffer = io.BytesIO()
        torch.save({"w": torch.arange(4, dtype=torch.float32), "epoch": 3}, buffer)
        self.torch_zip = buffer.getvalue()
        with zipfile.ZipFile(io.BytesIO(self.torch_zip)) as z:
            self.members = [(i.filename, z.read(i)) for i in z.infolist()]
        buffer = io.BytesIO()
        torch.save({"w": torch.arange(4, dtype=torch.float32)}, buffer, _use_new_zipfile_serialization=False)
        self.legacy = buffer.getvalue()
        buffer = io.BytesIO()
        numpy.save(buffer, numpy.arange(6, dtype=numpy.float32))
        self.npy = buffer.getvalue()
        path = os.path.join(scratch, "base.npz")
        numpy.savez(path, a=numpy.arange(3), b=numpy.ones(2))
        with open(path, "rb") as f:
            self.npz = f.read()


def torch_entries(bases, evil, rng, where="data.pkl"):
    out = []
    for name, data in bases.members:
        out.append(Entry(name, evil if name.endswith(where) else data))
    return out


def legacy_stream_pickles(data):
    at, spans = 0, []
    for _ in range(5):
        end, _, _ = pickle_facts(data[at:])
        if end is None:
            break
        spans.append((at, at + end))
        at += end
    return spans


def tar_bytes(members, fmt=tarfile.GNU_FORMAT, v7_magic=False, links=()):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=fmt) as archive:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
        for name, target in links:
            info = tarfile.TarInfo(name)
            info.type = tarfile.SYMTYPE
            info.linkname = target
            archive.addfile(info)
    blob = bytearray(buffer.getvalue())
    if v7_magic:  # a v7 header: no "ustar" magic, checksum recomputed (Python's tarfile reads it)
        for at in range(0, len(blob) - 512, 512):
            if blob[at + 257:at + 262] == b"ustar":
                blob[at + 257:at + 265] = b"\0" * 8
                blob[at + 148:at + 156] = b" " * 8
                blob[at + 148:at + 156] = b"%06o\0 " % sum(blob[at:at + 512])
    return bytes(blob)


def legacy_tar(evil_member, evil):
    sys_info = b"\x80\x02}" + BINUNICODE("little_endian") + b"\x88s."
    storages = (b"\x80\x02K\x01." + b"\x80\x02(X\x01\x00\x00\x000X\x03\x00\x00\x00cpu" + GLOBAL("torch", "FloatStorage")
                + b"t." + struct.pack("<q", 4) + b"\0" * 16 + b"\x80\x02]q\x00.")
    tensors = b"\x80\x02K\x00."
    main = b"\x80\x02}" + BINUNICODE("w") + b"K\x01s."
    members = {"sys_info": sys_info, "pickle": main, "storages": storages, "tensors": tensors}
    if evil_member == "storages-views":
        members["storages"] = storages[:-len(b"\x80\x02]q\x00.")] + evil
    elif evil_member == "storages-args":
        members["storages"] = b"\x80\x02K\x01." + evil
    else:
        members[evil_member] = evil
    return [(k, v) for k, v in members.items()]


def npy_with_descr(descr_text, data, version=1):
    header = ("{'descr': %s, 'fortran_order': False, 'shape': (1,), }" % descr_text).encode("latin1")
    if version == 1:
        pad = (64 - (10 + len(header) + 1) % 64) % 64
        header = header + b" " * pad + b"\n"
        return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header + data
    pad = (64 - (12 + len(header) + 1) % 64) % 64
    header = header + b" " * pad + b"\n"
    return b"\x93NUMPY" + bytes([version, 0]) + struct.pack("<I", len(header)) + header + data


OBJECT_DESCRS = ["'O'", "'|O'", "'|O8'", "'object'", "\"O\"", "'\\x4f'", "u'O'", "[('a', 'O')]",
                 "[('a', '<f4'), ('b', '|O')]", "[('a', 'O', (2,))]", "('O', (2,))", "[(('t', 'a'), 'O')]",
                 "'O8'", "'=O'", "[('a', [('b', 'O')])]", "'f4,O'", "'(2,)O'"]


def case_zip(bases, rng, kind=None):
    kind = kind or rng.choice(["plain", "case", "nul", "duplicate", "local-name", "flags", "deflate", "crc", "extra-eocd",
                       "comment", "miniz-cd", "zip64-python", "zip64-miniz", "hidden-local", "prefix", "unicode-extra",
                       "renamed", "method", "encrypted"])
    evil = payload(rng.randrange(4))
    entries = torch_entries(bases, evil if kind == "plain" else benign_pickle(), rng)
    prefix = bases.members[0][0].split("/")[0]
    if kind == "case":
        entries = [e for e in entries if not e.name.endswith("data.pkl")]
        entries.insert(rng.randrange(1, len(entries) + 1), Entry(prefix + rng.choice(["/DATA.PKL", "/Data.pkl", "/data.PKL"]), evil))
    elif kind == "nul":
        entries = [e for e in entries if not e.name.endswith("data.pkl")]
        entries.append(Entry(prefix + "/data.pkl\0.txt", evil, local_name=prefix + "/data.pkl\0.txt"))
    elif kind == "duplicate":
        entries.insert(rng.randrange(0, len(entries) + 1), Entry(prefix + "/data.pkl", evil))
    elif kind == "local-name":
        entries.append(Entry(prefix + "/data.txt", evil, local_name=prefix + "/data.pkl"))
    elif kind == "flags":
        for e in entries:
            if e.name.endswith("data.pkl"):
                e.data = evil
                e.flags = rng.choice([0x1, 0x8, 0x800, 0x20, 0x40, 0x2000])
                e.local_flags = rng.choice([e.flags, 0])
    elif kind == "encrypted":  # really encrypted: zipfile decrypts it given the password
        for e in entries:
            if e.name.endswith("data.pkl"):
                e.data, e.flags, e.encrypt = evil, 0x1, True
    elif kind == "deflate":
        for e in entries:
            if e.name.endswith("data.pkl"):
                e.data, e.method = evil, 8
    elif kind == "method":
        for e in entries:
            if e.name.endswith("data.pkl"):
                e.data, e.method = evil, rng.choice([12, 14])
    elif kind == "crc":
        for e in entries:
            if e.name.endswith("data.pkl"):
                e.data, e.bad_crc = evil, True
    elif kind == "renamed":
        entries.append(Entry(prefix + "/" + rng.choice(["payload.txt", "data", "extra/x", ".data/x.pkl"]), evil))
    elif kind == "unicode-extra":  # Info-ZIP unicode path: Python 3.14 takes this name
        name = (prefix + "/data.pkl").encode()
        other = prefix + "/notes.bin"
        extra = struct.pack("<HHB", 0x7075, 5 + len(name), 1) + struct.pack("<I", zlib.crc32(other.encode())) + name
        entries = [e for e in entries if not e.name.endswith("data.pkl")]
        entries.append(Entry(other, evil, central_extra=extra))
    out, central, count = build_zip(entries)
    if kind == "extra-eocd":  # a second archive's directory after the first end record
        evil_entries = torch_entries(bases, evil, rng)
        start = len(out) + len(central) + 22
        second, central2, count2 = build_zip(evil_entries, prefix=bytes(out + central + eocd(count, len(central), len(out))))
        return "extra_eocd.pt", finish(second, central2, count2)
    if kind == "comment":  # a fake end record inside the comment
        fake_out, fake_central, fake_count = build_zip(torch_entries(bases, evil, rng), prefix=bytes(out))
        body = bytes(fake_out + fake_central)
        real = eocd(count, len(central), len(out))
        hidden_central_at = len(fake_out)
        comment = eocd(fake_count, len(fake_central), hidden_central_at)
        comment_length = rng.choice([len(comment), 0, len(comment) + 5])
        blob = body + central + struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, count, count, len(central), len(body),
                                            comment_length) + comment
        return "comment.pt", blob
    if kind == "miniz-cd":
        # miniz reads the directory at the offset the end record gives; zipfile at (end record -
        # size), shifting every offset by the difference. The directory only miniz reads (H) and its
        # members hide inside a member (the carrier) no directory lists; the visible directory (V)
        # follows the visible members.
        hidden_entries = torch_entries(bases, evil, rng)
        visible = torch_entries(bases, benign_pickle(), rng)
        if rng.random() < 0.5:
            hidden_entries, visible = visible, hidden_entries
        carrier_name = prefix + "/carrier"
        visible_bytes, _, _ = build_zip(visible)
        pad = len(visible_bytes) + 64
        data_at = 30 + len(carrier_name)
        shifted, hidden_central, hidden_count = build_zip(hidden_entries, prefix=b"J" * (data_at + pad))
        h_start = len(shifted)
        carrier = Entry(carrier_name, bytes(shifted[data_at:]) + bytes(hidden_central), in_central=False)
        out, _, _ = build_zip([carrier] + visible)
        v_start = len(out)
        concat = v_start - h_start
        central = bytearray()
        at = len(out) - len(visible_bytes)
        for e in visible:
            comp = compress(e.data, e.method, e.encrypt)
            central += central_header(e, comp, at - concat)
            at += len(local_header(e, comp)) + len(comp)
        return "miniz_cd.pt", bytes(out) + bytes(central) + eocd(hidden_count, len(central), h_start)
    if kind in ("zip64-python", "zip64-miniz"):
        # zipfile 3.11 takes the ZIP64 end record just before the locator; miniz (and zipfile 3.14,
        # when the record there checks out) the one at the locator's offset. Record A (at the
        # locator's offset) and directory H hide in a carrier member; H lists a "blob" member whose
        # data covers the visible members, whose directory V record B (before the locator) names.
        hidden_entries = torch_entries(bases, evil if kind == "zip64-miniz" else benign_pickle(), rng)
        visible = torch_entries(bases, evil if kind == "zip64-python" else benign_pickle(), rng)
        carrier_name = prefix + "/carrier"
        data_at = 30 + len(carrier_name)
        visible_bytes, _, _ = build_zip(visible)
        # H's members, H and A inside the carrier; then "JJJJ" + the visible members (= blob's data)
        blob_data = b"JJJJ" + bytes(visible_bytes)
        # first pass for lengths
        probe, probe_central, _ = build_zip(hidden_entries + [Entry(prefix + "/blob", blob_data)], prefix=b"J" * (data_at + 8))
        blob_local = len(local_header(Entry(prefix + "/blob", blob_data), blob_data))
        members_only, _, _ = build_zip(hidden_entries, prefix=b"J" * (data_at + 8))
        h_start = len(members_only)
        a_at = h_start + len(probe_central)
        carrier_end = a_at + 56
        blob_at = carrier_end  # blob's local header right after the carrier
        central = bytearray()
        at = data_at + 8
        for e in hidden_entries:
            comp = compress(e.data, e.method, e.encrypt)
            central += central_header(e, comp, at)
            at += len(local_header(e, comp)) + len(comp)
        central += central_header(Entry(prefix + "/blob", blob_data), blob_data, blob_at)
        hidden_count = len(hidden_entries) + 1
        visible_at = blob_at + blob_local + 4
        v_start = visible_at + len(visible_bytes)
        v_central = bytearray()
        at = visible_at
        for e in visible:
            comp = compress(e.data, e.method, e.encrypt)
            v_central += central_header(e, comp, at)
            at += len(local_header(e, comp)) + len(comp)
        b_at = v_start + len(v_central)
        record_a, _ = zip64_tail(hidden_count, len(central), h_start, 0)
        record_a = record_a[:4] + struct.pack("<Q", 44 + (b_at - a_at)) + record_a[12:]
        record_b, locator = zip64_tail(len(visible), len(v_central), v_start, a_at)
        carrier_data = bytes(members_only[data_at:]) + bytes(central) + record_a
        carrier = Entry(carrier_name, carrier_data, in_central=False)
        head, _, _ = build_zip([carrier])
        blob_entry = Entry(prefix + "/blob", blob_data, in_central=False)
        head2, _, _ = build_zip([blob_entry], prefix=bytes(head))
        blob = bytes(head2) + bytes(v_central) + record_b + locator + eocd(0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF)
        assert len(head) == blob_at and len(head2) == v_start, (len(head), blob_at, len(head2), v_start)
        return kind.replace("-", "_") + ".pt", blob
    if kind == "hidden-local":  # directory entry pointing into another member's data
        hidden = local_header(Entry(prefix + "/data.pkl", evil), evil) + evil
        carrier = Entry(prefix + "/data/9", b"JUNK" + hidden)
        visible = [e for e in entries if not e.name.endswith("data.pkl")]
        out, _, _ = build_zip(visible + [carrier])
        carrier_data_at = len(out) - len(carrier.data)
        central = bytearray()
        at = 0
        for e in visible + [carrier]:
            comp = compress(e.data, e.method, e.encrypt)
            central += central_header(e, comp, at)
            at += len(local_header(e, comp)) + len(comp)
        target = Entry(prefix + "/data.pkl", evil)
        central_first = central_header(target, evil, carrier_data_at + 4)
        count_lie = rng.random() < 0.4  # zipfile reads entries for the directory's size, miniz its count
        central = central_first + central if rng.random() < 0.5 and not count_lie else central + central_first
        count = len(visible) + 1 if count_lie else len(visible) + 2
        return ("count_lie.pt" if count_lie else "hidden_local.pt"), bytes(out) + bytes(central) + eocd(
            count, len(central), len(out))
    if kind == "prefix":  # data in front: zipfile shifts offsets, miniz does not
        entries = torch_entries(bases, evil, rng)
        front = rng.choice([b"\0" * 100, benign_pickle(), b"#!/bin/sh\n" + b"x" * 50])
        out, central, count = build_zip(entries, prefix=front, relative=rng.random() < 0.5)
        return "prefix.pt", finish(out, central, count, base=0)
    return kind + ".pt", finish(out, central, count)


def case_legacy(bases, rng):
    data = bases.legacy
    spans = legacy_stream_pickles(data)
    which = rng.randrange(len(spans))
    evil = payload(rng.randrange(4))
    start, end = spans[which]
    if rng.random() < 0.3:
        blob = data[:end] + evil + data[end:]  # an extra pickle between two of them
    else:
        blob = data[:start] + evil + data[end:]
    return "legacy_%d.pt" % which, blob


def case_tar(bases, rng):
    evil = payload(rng.randrange(4))
    member = rng.choice(["pickle", "sys_info", "storages-views", "storages-args", "tensors"])
    members = legacy_tar(member, evil)
    links = ()
    if rng.random() < 0.25:  # the last of two same-named members is the one tarfile extracts
        name = rng.choice(["pickle", "storages"])
        members = [(n, d) for n, d in members] + [(name, dict(legacy_tar("pickle", benign_pickle()))[name])]
        members.insert(0, (name, evil))
    if rng.random() < 0.2:  # 'pickle' as a link to another member
        members = [(n, d) if n != "pickle" else ("payload", evil) for n, d in members]
        links = (("pickle", "payload"),)
    if rng.random() < 0.15:  # the first member's name is itself a pickle: pickle.load(file) runs it
        members.insert(0, (payload(rng.choice([0, 3])).decode("latin1")[:99], b""))
    fmt = rng.choice([tarfile.GNU_FORMAT, tarfile.PAX_FORMAT, tarfile.USTAR_FORMAT])
    return "legacy_tar_%s.pt" % member, tar_bytes(members, fmt, v7_magic=rng.random() < 0.4, links=links)


def case_npy(bases, rng):
    evil = payload(rng.randrange(4))
    descr = rng.choice(OBJECT_DESCRS)
    blob = npy_with_descr(descr, evil, version=rng.choice([1, 1, 2, 3]))
    if rng.random() < 0.5:
        name = rng.choice(["x.npy", "x", "dir/x.npy", "x.npy.txt", "X.NPY", "../x.npy"])
        return "object.npz", finish(*build_zip([Entry(name, blob, method=rng.choice([0, 8]))])[:3])
    return "object.npy", blob


def case_lookalike(bases, rng, kind=None):
    evil = payload(0)
    kind = kind or rng.choice(["safetensors-pickle", "npy-named-pt", "pickle-then-zip", "zip-then-pickle", "gz-like"])
    if kind == "safetensors-pickle":
        # BINBYTES whose length bytes also make a valid safetensors header length: byte 0 'B',
        # the u32 length n, then 3 zero bytes (inside the BINBYTES data), so the header length is
        # 0x42 + 256 * n. The pickle resumes inside the JSON, in a string of SHORT_BINSTRING hops.
        n = 40
        header_length = 0x42 + 256 * n
        resume = 5 + n  # file offset where the pickle continues (inside the header at 8 + ...)
        inside = resume - 8
        # JSON: {"__metadata__":{"p":"...."}} padded; the hop string starts where the pickle resumes
        head = b'{"__metadata__":{"p":"'
        assert len(head) <= inside or True
        # put the hop at offset `inside` of the JSON: pad before with metadata text
        pre = b'{"__metadata__":{"a":"' + b"x" * max(0, inside - 22)
        pre = pre[:inside] if len(pre) > inside else pre
        # from here: SHORT_BINSTRING hops ('U', a length byte that is a printable character) skip
        # to the end of the header, the last one over the JSON's closing '"}}' too; the payload
        # sits where the tensor data begins.
        tail = ('"},"t":{"dtype":"U8","shape":[%d],"data_offsets":[0,%d]}}' % (len(evil), len(evil))).encode()
        left = header_length - len(pre)
        hops = bytearray()
        while left > 130:
            step = 0x70 if left - 0x72 >= 40 else 0x40
            hops += b"U" + bytes([step]) + b"y" * step
            left -= 2 + step
        step = left - 2
        if step < len(tail) or chr(step) in "\\\"" or step < 0x20:
            return "gz_like.pt", b"\x1f\x8b" + evil
        hops += b"U" + bytes([step]) + b"y" * (step - len(tail)) + tail
        header = pre + bytes(hops)
        assert len(header) == header_length
        blob = struct.pack("<Q", header_length) + header + evil
        blob = bytearray(blob)
        blob[0:5] = b"B" + struct.pack("<I", n)
        return "polyglot.safetensors", bytes(blob)
    if kind == "npy-named-pt":
        return "array.pt", npy_with_descr("'O'", evil)
    if kind == "pickle-then-zip":
        return "pickle_then_zip.pt", evil + bases.torch_zip
    if kind == "zip-then-pickle":
        return "zip_then_pickle.pt", bases.torch_zip + evil
    return "gz_like.pt", b"\x1f\x8b" + evil


def case_mutate(bases, rng):
    """A case above with 1-4 of its structure's fields overwritten: bytes near a zip signature, a tar
    header field, an .npy header byte, set to a random or boundary value."""
    base = rng.choice([case_zip, case_zip, case_tar, case_npy, case_legacy])
    name, blob = base(bases, rng)
    blob = bytearray(blob)
    anchors = [i for sig in (b"PK\x01\x02", b"PK\x03\x04", b"PK\x05\x06", b"PK\x06\x06", b"PK\x06\x07")
               for i in range(len(blob)) if blob.startswith(sig, i)]
    anchors += list(range(0, len(blob), 512))[:8] if name.startswith("legacy_tar") else []
    anchors += [0] if name.startswith("object") or name.startswith("legacy") else []
    for _ in range(rng.randint(1, 4)):
        if not blob:
            break
        at = (rng.choice(anchors) + rng.randrange(64)) if anchors and rng.random() < 0.85 else rng.randrange(len(blob))
        at = min(at, len(blob) - 1)
        width = rng.choice([1, 1, 2, 4])
        value = rng.choice([0, 1, 0xFF, 0xFFFF, 0xFFFFFFFF, rng.randrange(1 << 32), len(blob), len(blob) // 2])
        chunk = (value & ((1 << (8 * width)) - 1)).to_bytes(width, "little")
        blob[at:at + width] = chunk[:len(blob) - at]
    return "mutated_" + name, bytes(blob)


CASES = [case_zip, case_zip, case_zip, case_legacy, case_tar, case_npy, case_lookalike, case_mutate, case_mutate,
         case_mutate]


# ---- the tool's side ---------------------------------------------------------------------------------
def tool_verdict(ckpt, path):
    result = subprocess.run([ckpt, "check", path, "--json"], capture_output=True, timeout=60)
    text = result.stdout.decode("utf-8", "replace")
    try:
        report = json.loads(text)
    except ValueError:
        # The CLI's terminal filter writes a DEL byte (legal in JSON, left raw by the JSON writer)
        # as the text \x7f, which is no JSON escape: counted, repaired, and the file still judged.
        try:
            report = json.loads(text.replace("\\x7f", "\\u007f"))
            INVALID_JSON.append(path)
        except ValueError:
            return None, "check --json printed no JSON (exit %d): %s" % (result.returncode, result.stderr[-300:])
    safety = report.get("safety") or {}
    return safety, None


INVALID_JSON = []


def covered(view, safety, what=""):
    end, calls, names = JUDGE_PROCESS.facts(view)
    if not calls:
        return True, None
    member = what.split("'")[1] if what.count("'") >= 2 else None
    if member and safety.get("rating") == "dangerous" and any(
            member in c and ("compression method" in c or "cannot be unpacked" in c)
            for c in safety.get("cannot_verify", [])):
        return True, "excused"  # a member the tool says it cannot unpack, by name
    if "decrypted" in what:  # the tool cannot decrypt: it must say it cannot verify, and why
        if safety.get("rating") == "dangerous" and any("encrypted" in c for c in safety.get("cannot_verify", [])):
            return True, None
        return False, "an encrypted member holds a pickle, but the verdict does not say it cannot verify it"
    for rated in safety.get("pickle_bytes", []):
        length = rated["length"]
        if length > len(view) or zlib.crc32(view[:length]) != rated["crc32"]:
            continue
        if rated["complete"] and end is not None and length == end:
            return True, None
        if not rated["complete"] and safety.get("rating") == "dangerous":
            return True, None
        if rated["complete"] and end is None and safety.get("rating") == "dangerous":
            return True, None  # CPython's walk failed where the tool's ended: the pickle differential's part
    return False, "bytes %r... (%d bytes, STOP at %s) not among the rated pickles" % (view[:24], len(view), end)


def names_ok(view, safety):
    _, calls, names = JUDGE_PROCESS.facts(view)
    wanted = [n for n in names if n in ("os.system", "posix.system")]
    if not wanted:
        return True
    unsafe = [u["name"] for u in safety.get("unsafe", [])]
    return safety.get("rating") == "dangerous" and any(n in unsafe for n in ("os.system", "posix.system"))


class ModernServer:
    def __init__(self, command):
        self.proc = None
        if command:
            try:
                self.proc = subprocess.Popen(command + [os.path.abspath(__file__), "--serve"], stdin=subprocess.PIPE,
                                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            except OSError:
                self.proc = None

    def views(self, path):
        if not self.proc:
            return []
        self.proc.stdin.write(path + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            self.proc = None
            return []
        return [(v["reader"], v["what"], base64.b64decode(v["b64"])) for v in json.loads(line)]


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--serve":
        serve()
        return 0
    parser = argparse.ArgumentParser()
    parser.add_argument("ckpt_inspect")
    parser.add_argument("--seed", type=int, default=24)
    parser.add_argument("--cases", type=int, default=0)
    parser.add_argument("--minutes", type=float, default=0)
    parser.add_argument("--out", default=None)
    parser.add_argument("--modern", default=os.environ.get("CKPT_MODERN_PYTHON", ""))
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args()
    if not args.cases and not args.minutes:
        args.cases = 200
    scratch = tempfile.mkdtemp(prefix="container-differential-")
    out = args.out or os.path.join(scratch, "disagreements")
    os.makedirs(out, exist_ok=True)
    bases = Bases(scratch)
    modern = ModernServer(args.modern.split() if args.modern else None)
    rng = random.Random(args.seed)
    deadline = time.time() + args.minutes * 60 if args.minutes else None
    executions = views_checked = disagreements = 0
    kinds = {}
    try:
        while (deadline is None and executions < args.cases) or (deadline is not None and time.time() < deadline):
            case = rng.choice(CASES)
            case_seed = rng.randrange(1 << 30)
            name, blob = case(bases, random.Random(case_seed))
            path = os.path.join(scratch, "%06d_%s" % (executions, name))
            with open(path, "wb") as f:
                f.write(blob)
            executions += 1
            kinds[name] = kinds.get(name, 0) + 1
            safety, error = tool_verdict(args.ckpt_inspect, path)
            problems = []
            if error:
                problems.append(error)
            else:
                for reader, what, view in reader_views(path) + modern.views(path):
                    views_checked += 1
                    ok, why = covered(view, safety, what)
                    if not ok:
                        problems.append("%s, %s: %s" % (reader, what, why))
                    elif "decrypted" not in what and why != "excused" and not names_ok(view, safety):
                        problems.append("%s, %s: calls os.system, but the verdict is %s naming %s" % (
                            reader, what, safety.get("rating"), [u["name"] for u in safety.get("unsafe", [])]))
            if problems:
                disagreements += 1
                kept = os.path.join(out, os.path.basename(path))
                shutil.copyfile(path, kept)
                with open(kept + ".txt", "w") as f:
                    f.write("case %s seed %d\n%s\n" % (case.__name__, case_seed, "\n".join(problems)))
                if not args.quiet:
                    print("DISAGREEMENT %s (%s seed %d):\n  %s" % (kept, case.__name__, case_seed,
                                                                   "\n  ".join(problems[:6])))
            os.unlink(path)
    finally:
        if modern.proc:
            modern.proc.stdin.close()
            modern.proc.wait(timeout=30)
    print("container differential: %d executions, %d reader views checked, %d disagreements (seed %d, modern %s)"
          % (executions, views_checked, disagreements, args.seed, "yes" if modern.proc is not None or not args.modern
             else "no"))
    if INVALID_JSON:
        print("check --json printed invalid JSON (a DEL byte as \\x7f) for %d files, e.g. %s"
              % (len(INVALID_JSON), os.path.basename(INVALID_JSON[0])))
    if not args.quiet:
        print("cases: " + ", ".join("%s %d" % kv for kv in sorted(kinds.items())))
    shutil.rmtree(scratch, ignore_errors=True) if not disagreements else None
    return 1 if disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
