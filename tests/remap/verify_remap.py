#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Check a remapped copy written by `ckpt-inspect remap` against its original, with real torch.

Usage:
    verify_remap.py ORIGINAL REMAPPED SUMMARY_JSON [--expect EXPECT_JSON] [--trusted]
    verify_remap.py ORIGINAL --case REMAPPED SUMMARY_JSON EXPECT_JSON|- [--case ...] [--trusted]
    verify_remap.py --serve      (one JSON request per stdin line, see serve(); used by
                                  tests/cli/tst_remap.cpp so that each torch is imported once)

Runs under torch 1.13 (/usr/bin/python3) and under torch 2.x (tests/tools/modern-python). Several
(REMAPPED, SUMMARY) cases of one ORIGINAL can be checked in one process (`--case`, repeatable):
importing torch costs seconds, loading ORIGINAL is done once.

SUMMARY_JSON is what `ckpt-inspect remap --json` printed. EXPECT_JSON (optional) says what the
caller computed independently: {"tensor_devices": {name: device}} for tensors without storage
(wrapper subclasses), whose recorded device is a rebuild argument rather than a storage tag; it is
checked in the pickle (the device argument) and, where torch loads the file, on the loaded tensor.

Checks, one line per failure ("FAIL ..."), exit 1 on any failure, else exit 0 and one "ok ..." line:
  static (no torch, nothing unpickled: pickles are read with pickletools and evaluated symbolically)
    - the summary's storages are exactly the input's storages, with "recorded" = the input's tag;
    - the tags in REMAPPED's persistent ids are the summary's "planned" ones (by output_key);
    - REMAPPED's pickles equal ORIGINAL's node for node (same globals, calls, strings, numbers,
      containers, memo sharing of mutable objects) except the storage location tags, storage keys
      of converted legacy files, and the device arguments of rebuild functions (section 3.1);
    - records: same names in the same order (zip input), storage records and every record other
      than data.pkl / constants.pkl / bytecode.pkl / .data/serialization_id byte-identical (content,
      CRC, compression, compressed bytes), payloads aligned (torch.save framing); for legacy input,
      each data/<output_key> equals the storage bytes of the legacy stream.
  torch (the torch running this script)
    a. weights_only: if ORIGINAL loads with weights_only=True, REMAPPED must too; otherwise (only
       with --trusted) both are loaded with weights_only=False; untrusted files that do not load
       with weights_only=True (and untrusted TorchScript, which torch.load hands to torch.jit.load)
       get "skipped: ..." and only the static checks;
    b. tags: the tag torch passes to a recording map_location for each storage key equals
       "planned"; when every planned tag is "cpu", REMAPPED also loads with plain torch.load;
    c. values: every tensor of REMAPPED equals ORIGINAL's (type, dtype, shape, stride, offset,
       requires_grad, all storage bytes, quantizer parameters, sparse/nested parts), storages
       shared in ORIGINAL are shared in REMAPPED and only there, and every non-tensor value is
       equal (the memo-hazard fixture's user string stays what it was).
  ORIGINAL that this torch cannot load at all gets "skipped: ..." for the torch checks, never a
  failure. Never pass an untrusted file with --trusted: that loads it with a real unpickler.

Why one file of about 1,700 lines: it runs inside each torch (1.13 and 2.x) as one process that
the C++ suite feeds case by case (--serve), so that torch is imported once; its checks (tags, values,
weights_only, records byte for byte, sharing) share the loaded original.
"""

import argparse
import collections
import io
import json
import os
import pickletools
import re
import struct
import sys
import types
import warnings
import zipfile

sys.setrecursionlimit(20000)

# Pickles that may be re-emitted, and the folder their storage keys name records in. TorchScript's
# traced_inputs.pkl records storages too (traced_inputs/<key>), so it is a pickle that may carry tags.
PICKLE_FOLDERS = {"data.pkl": "data", "constants.pkl": "constants", "bytecode.pkl": "constants",
                  "traced_inputs.pkl": "traced_inputs"}
PICKLE_RECORDS = tuple(PICKLE_FOLDERS)
SERIALIZATION_ID = ".data/serialization_id"
LEGACY_MAGIC = 0x1950A86A20F9469CFC6C

# Element size of each legacy storage class (section 9); UntypedStorage counts bytes.
STORAGE_ELEMENT_SIZE = {
    "DoubleStorage": 8, "FloatStorage": 4, "HalfStorage": 2, "BFloat16Storage": 2,
    "LongStorage": 8, "IntStorage": 4, "ShortStorage": 2, "CharStorage": 1, "ByteStorage": 1,
    "BoolStorage": 1, "ComplexDoubleStorage": 16, "ComplexFloatStorage": 8, "QInt8Storage": 1,
    "QUInt8Storage": 1, "QInt32Storage": 4, "QUInt4x2Storage": 1, "QUInt2x4Storage": 1,
    "UntypedStorage": 1, "ComplexHalfStorage": 4,
}

# Rebuild functions that carry a device outside the storage persistent id: index of that argument.
DEVICE_ARGUMENT = {
    ("torch._utils", "_rebuild_wrapper_subclass"): 6,
    ("torch._utils", "_rebuild_device_tensor_from_numpy"): 2,
    ("torch._utils", "_rebuild_xla_tensor"): 2,
    ("torch._utils", "_rebuild_device_tensor_from_cpu_tensor"): 2,
}


class Report:
    def __init__(self):
        self.failures = 0
        self.skips = []
        self.notes = []

    def fail(self, where, message):
        self.failures += 1
        print("FAIL %s: %s" % (where, message))
        sys.stdout.flush()

    def skip(self, where, message):
        self.skips.append(where)
        print("skipped: %s: %s" % (where, message))
        sys.stdout.flush()


REPORT = Report()


def short(value, limit=160):
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


# =============================================================================================
# Symbolic pickle machine: evaluates opcodes into inert nodes; nothing is imported or called.
# =============================================================================================

class Global:
    __slots__ = ("module", "name")

    def __init__(self, module, name):
        self.module, self.name = module, name

    def __eq__(self, other):
        return isinstance(other, Global) and (self.module, self.name) == (other.module, other.name)

    def __hash__(self):
        return hash((self.module, self.name))

    def __repr__(self):
        return "%s.%s" % (self.module, self.name)


class Call:
    """REDUCE / NEWOBJ / NEWOBJ_EX / INST / OBJ result, with what later opcodes applied to it."""
    __slots__ = ("kind", "func", "args", "builds", "appends", "setitems", "__weakref__")

    def __init__(self, kind, func, args):
        self.kind, self.func, self.args = kind, func, args
        self.builds, self.appends, self.setitems = [], [], []

    def __repr__(self):
        return "%s(%r, ...)" % (self.kind, self.func)


class PDict:
    __slots__ = ("pairs",)

    def __init__(self, pairs=None):
        self.pairs = pairs if pairs is not None else []

    def __repr__(self):
        return "{%s}" % ", ".join("%r: %r" % kv for kv in self.pairs[:4])


class PSet:
    __slots__ = ("items", "frozen")

    def __init__(self, items, frozen=False):
        self.items, self.frozen = items, frozen


class PersId:
    __slots__ = ("pid",)

    def __init__(self, pid):
        self.pid = pid

    def __repr__(self):
        return "PersId(%r)" % (self.pid,)


class Str8:
    """A protocol-0..2 byte string (STRING/BINSTRING/SHORT_BINSTRING), as latin-1 text."""
    __slots__ = ("text",)

    def __init__(self, text):
        self.text = text

    def __eq__(self, other):
        return isinstance(other, Str8) and self.text == other.text

    def __hash__(self):
        return hash(self.text)

    def __repr__(self):
        return "Str8(%r)" % self.text


class Float:
    __slots__ = ("bits",)

    def __init__(self, value):
        self.bits = struct.pack(">d", value)

    def __eq__(self, other):
        return isinstance(other, Float) and self.bits == other.bits

    def __hash__(self):
        return hash(self.bits)

    def __repr__(self):
        return repr(struct.unpack(">d", self.bits)[0])


class ByteArray:
    __slots__ = ("data",)

    def __init__(self, data):
        self.data = bytes(data)

    def __eq__(self, other):
        return isinstance(other, ByteArray) and self.data == other.data

    def __hash__(self):
        return hash(self.data)


class SymbolicError(Exception):
    pass


_MARK = object()


def symbolic_load(data, pos=0, pids=None):
    """Evaluate the pickle starting at data[pos]; return (root node, offset after STOP).
    Persistent ids are appended to `pids` (if given) in the order the pickle reads them."""
    stream = io.BytesIO(data)
    stream.seek(pos)
    stack, metastack, memo = [], [], {}

    def pop_mark():
        nonlocal stack
        items = stack
        if not metastack:
            raise SymbolicError("MARK missing")
        stack = metastack.pop()
        return items

    end = None
    try:
        for op, arg, at in pickletools.genops(stream):
            name = op.name
            if name in ("PROTO", "FRAME"):
                continue
            if name == "STOP":
                end = at + 1
                break
            if name == "MARK":
                metastack.append(stack)
                stack = []
            elif name == "POP":
                if stack:
                    stack.pop()
                else:
                    pop_mark()
            elif name == "POP_MARK":
                pop_mark()
            elif name == "DUP":
                stack.append(stack[-1])
            elif name in ("INT", "BININT", "BININT1", "BININT2", "LONG", "LONG1", "LONG4"):
                stack.append(arg)
            elif name == "NONE":
                stack.append(None)
            elif name == "NEWTRUE":
                stack.append(True)
            elif name == "NEWFALSE":
                stack.append(False)
            elif name in ("FLOAT", "BINFLOAT"):
                stack.append(Float(arg))
            elif name in ("STRING", "BINSTRING", "SHORT_BINSTRING"):
                stack.append(Str8(arg if isinstance(arg, str) else arg.decode("latin-1")))
            elif name in ("UNICODE", "BINUNICODE", "SHORT_BINUNICODE", "BINUNICODE8"):
                stack.append(arg)
            elif name in ("BINBYTES", "SHORT_BINBYTES", "BINBYTES8"):
                stack.append(bytes(arg))
            elif name == "BYTEARRAY8":
                stack.append(ByteArray(arg))
            elif name == "EMPTY_LIST":
                stack.append([])
            elif name == "LIST":
                items = pop_mark()
                stack.append(list(items))
            elif name == "APPEND":
                value = stack.pop()
                _append(stack[-1], [value])
            elif name == "APPENDS":
                items = pop_mark()
                _append(stack[-1], items)
            elif name == "EMPTY_TUPLE":
                stack.append(())
            elif name == "TUPLE":
                items = pop_mark()
                stack.append(tuple(items))
            elif name in ("TUPLE1", "TUPLE2", "TUPLE3"):
                n = int(name[-1])
                items = tuple(stack[-n:])
                del stack[-n:]
                stack.append(items)
            elif name == "EMPTY_DICT":
                stack.append(PDict())
            elif name == "DICT":
                items = pop_mark()
                stack.append(PDict([(items[i], items[i + 1]) for i in range(0, len(items), 2)]))
            elif name == "SETITEM":
                value = stack.pop()
                key = stack.pop()
                _setitems(stack[-1], [(key, value)])
            elif name == "SETITEMS":
                items = pop_mark()
                _setitems(stack[-1], [(items[i], items[i + 1]) for i in range(0, len(items), 2)])
            elif name == "EMPTY_SET":
                stack.append(PSet([]))
            elif name == "ADDITEMS":
                items = pop_mark()
                target = stack[-1]
                if not isinstance(target, PSet):
                    raise SymbolicError("ADDITEMS on %r" % (target,))
                target.items.extend(items)
            elif name == "FROZENSET":
                items = pop_mark()
                stack.append(PSet(list(items), frozen=True))
            elif name == "GLOBAL":
                module, _, attr = arg.partition(" ")
                stack.append(Global(module, attr))
            elif name == "STACK_GLOBAL":
                attr = stack.pop()
                module = stack.pop()
                stack.append(Global(module, attr))
            elif name == "REDUCE":
                args = stack.pop()
                func = stack.pop()
                stack.append(Call("reduce", func, args))
            elif name == "NEWOBJ":
                args = stack.pop()
                cls = stack.pop()
                stack.append(Call("newobj", cls, args))
            elif name == "NEWOBJ_EX":
                kwargs = stack.pop()
                args = stack.pop()
                cls = stack.pop()
                stack.append(Call("newobj_ex", cls, (args, kwargs)))
            elif name == "INST":
                module, _, attr = arg.partition(" ")
                items = pop_mark()
                stack.append(Call("inst", Global(module, attr), tuple(items)))
            elif name == "OBJ":
                items = pop_mark()
                stack.append(Call("obj", items[0], tuple(items[1:])))
            elif name == "BUILD":
                state = stack.pop()
                target = stack[-1]
                if not isinstance(target, Call):
                    raise SymbolicError("BUILD on %r" % (target,))
                target.builds.append(state)
            elif name in ("PUT", "BINPUT", "LONG_BINPUT"):
                memo[arg] = stack[-1]
            elif name == "MEMOIZE":
                memo[len(memo)] = stack[-1]
            elif name in ("GET", "BINGET", "LONG_BINGET"):
                if arg not in memo:
                    raise SymbolicError("memo slot %r read before it was written" % arg)
                stack.append(memo[arg])
            elif name in ("PERSID", "BINPERSID"):
                node = PersId(arg if name == "PERSID" else stack.pop())
                if pids is not None:
                    pids.append(node)
                stack.append(node)
            else:
                raise SymbolicError("opcode %s not handled" % name)
    except SymbolicError:
        raise
    except Exception as e:  # truncated or malformed pickle
        raise SymbolicError("%s: %s" % (type(e).__name__, e))
    if end is None:
        raise SymbolicError("no STOP")
    if len(stack) != 1 or metastack:
        raise SymbolicError("stack not empty at STOP")
    return stack[0], end


def _append(target, items):
    if isinstance(target, list):
        target.extend(items)
    elif isinstance(target, Call):
        target.appends.extend(items)
    else:
        raise SymbolicError("APPEND on %r" % (target,))


def _setitems(target, pairs):
    if isinstance(target, PDict):
        target.pairs.extend(pairs)
    elif isinstance(target, Call):
        target.setitems.extend(pairs)
    else:
        raise SymbolicError("SETITEM on %r" % (target,))


def text_of(value):
    if isinstance(value, Str8):
        return value.text
    if isinstance(value, bytes):
        return value.decode("latin-1")
    return value if isinstance(value, str) else None


def storage_pid(node):
    """(storage class name, key, location, numel, view metadata) of a storage persistent id."""
    if not isinstance(node, PersId) or not isinstance(node.pid, tuple) or len(node.pid) < 5:
        return None
    pid = node.pid
    if text_of(pid[0]) != "storage":
        return None
    cls = pid[1].name if isinstance(pid[1], Global) else None
    return cls, text_of(pid[2]), text_of(pid[3]), pid[4], pid[5] if len(pid) > 5 else None


# =============================================================================================
# Reading the files without torch
# =============================================================================================

class ZipRecord:
    def __init__(self, info, raw):
        self.info = info
        self.raw = raw  # compressed bytes as stored

    @property
    def name(self):
        return self.info.filename


class Archive:
    """What we know about a checkpoint without torch."""

    def __init__(self, path):
        self.path = path
        self.format = None  # torch-zip | torchscript | torch-legacy | other
        self.prefix = None
        self.records = []  # ZipRecord in central-directory order (zip)
        self.by_name = {}
        self.zip = None
        self.pickles = collections.OrderedDict()  # record (after prefix) -> root node
        self.pickle_errors = {}
        self.storages = collections.OrderedDict()  # storage id -> {"cls","key","location","numel"}
        self.legacy_bytes = None  # legacy: key -> raw storage bytes (None if not parsed)
        self.legacy_error = None
        with open(path, "rb") as f:
            self.data = f.read()
        if self.data[:4] == b"PK\x03\x04":
            self._read_zip()
        else:
            self._read_legacy()

    # --- zip ----------------------------------------------------------------------------------
    def _read_zip(self):
        self.zip = zipfile.ZipFile(io.BytesIO(self.data))
        for info in self.zip.infolist():
            lh = self.data[info.header_offset:info.header_offset + 30]
            if len(lh) < 30 or lh[:4] != b"PK\x03\x04":
                raise ValueError("%s: bad local header for %s" % (self.path, info.filename))
            name_len, extra_len = struct.unpack("<HH", lh[26:30])
            start = info.header_offset + 30 + name_len + extra_len
            rec = ZipRecord(info, self.data[start:start + info.compress_size])
            rec.payload_offset = start
            rec.local_name = self.data[info.header_offset + 30:info.header_offset + 30 + name_len]
            self.records.append(rec)
            self.by_name[info.filename] = rec
        first = self.records[0].name if self.records else ""
        self.prefix = first.split("/", 1)[0] if "/" in first else ""
        names = set(self.short_names())
        self.format = "torchscript" if "constants.pkl" in names else "torch-zip"
        for rec in self.records:
            short_name = self.short(rec.name)
            if short_name in PICKLE_RECORDS:
                pids = []
                try:
                    root, _ = symbolic_load(self.zip.read(rec.name), 0, pids)
                except Exception as e:
                    self.pickle_errors[short_name] = str(e)
                    continue
                self.pickles[short_name] = root
                folder = PICKLE_FOLDERS[short_name]
                for node in pids:
                    sp = storage_pid(node)
                    if sp is not None:
                        self._add_storage(folder + "/" + sp[1], sp, short_name)

    def short(self, name):
        return name[len(self.prefix) + 1:] if self.prefix and name.startswith(self.prefix + "/") else name

    def short_names(self):
        return [self.short(r.name) for r in self.records]

    def read(self, name):
        return self.zip.read(self.by_name[name].info)

    # --- legacy ---------------------------------------------------------------------------------
    def _read_legacy(self):
        self.format = "other"
        try:
            magic, pos = symbolic_load(self.data, 0)
        except Exception:
            return
        if magic != LEGACY_MAGIC:
            return
        self.format = "torch-legacy"
        try:
            _protocol, pos = symbolic_load(self.data, pos)
            _sys_info, pos = symbolic_load(self.data, pos)
            pids = []
            root, pos = symbolic_load(self.data, pos, pids)
        except Exception as e:
            self.pickle_errors["main"] = str(e)
            return
        self.pickles["main"] = root
        for node in pids:
            sp = storage_pid(node)
            if sp is not None:
                self._add_storage(sp[1], sp, "main")
        try:
            keys, pos = symbolic_load(self.data, pos)
            keys = [text_of(k) for k in keys]
            raw = {}
            for key in keys:
                cls = self.storages[key]["cls"] if key in self.storages else None
                if cls not in STORAGE_ELEMENT_SIZE:
                    raise ValueError("storage %s has class %s of unknown element size" % (key, cls))
                (count,) = struct.unpack("<q", self.data[pos:pos + 8])
                nbytes = count * STORAGE_ELEMENT_SIZE[cls]
                if pos + 8 + nbytes > len(self.data):
                    raise ValueError("storage %s runs past the end of the file" % key)
                raw[key] = self.data[pos + 8:pos + 8 + nbytes]
                pos += 8 + nbytes
            self.legacy_bytes = raw
        except Exception as e:
            self.legacy_error = str(e)

    def _add_storage(self, sid, sp, where):
        cls, key, location, numel, view = sp
        entry = self.storages.get(sid)
        if entry is None:
            self.storages[sid] = {"cls": cls, "key": key, "location": location, "numel": numel,
                                  "view": view, "pickle": where}
        elif entry["location"] != location:
            entry.setdefault("other_locations", set()).add(location)


# =============================================================================================
# Static checks
# =============================================================================================

class Case:
    def __init__(self, remapped, summary_path, expect_path):
        self.remapped = remapped
        self.summary_path = summary_path
        self.expect_path = expect_path
        self.label = os.path.basename(remapped)
        self.summary = None
        self.expect = {}
        self.planned = {}  # output storage id -> planned tag
        self.key_map = {}  # input storage id -> output storage id
        self.archive = None
        self.torch_mode = None

    def where(self, check):
        return "%s [%s]" % (self.label, check)


def summary_storage_ids(original, entry_key, output=False):
    """Normalise a summary key to our storage ids ('data/0', 'constants/0.storage', legacy key)."""
    if entry_key is None:
        return None
    key = str(entry_key)
    fmt = "torch-zip" if output else original.format
    if fmt == "torch-legacy":
        return key
    candidates = [key, "data/" + key, "constants/" + key]
    if original.prefix and key.startswith(original.prefix + "/"):
        candidates.insert(0, key[len(original.prefix) + 1:])
    if output:
        return candidates
    for c in candidates:
        if c in original.storages:
            return c
    return key


def check_summary(original, case):
    where = case.where("summary")
    try:
        with open(case.summary_path, encoding="utf-8") as f:
            case.summary = json.load(f)
    except Exception as e:
        REPORT.fail(where, "cannot read %s: %s" % (case.summary_path, e))
        return False
    s = case.summary
    if not isinstance(s, dict) or not isinstance(s.get("storages"), list):
        REPORT.fail(where, "no \"storages\" list")
        return False
    want_format = original.format
    if s.get("format") != want_format:
        REPORT.fail(where, "format %r, the input is %s" % (s.get("format"), want_format))
    if s.get("verified") is not True:
        REPORT.fail(where, "\"verified\" is %r" % (s.get("verified"),))
    try:
        size = os.path.getsize(case.remapped)
        if s.get("bytes_written") != size:
            REPORT.fail(where, "bytes_written %r, the file has %d bytes" % (s.get("bytes_written"), size))
    except OSError as e:
        REPORT.fail(where, "no remapped file: %s" % e)
        return False
    seen = set()
    for entry in s["storages"]:
        sid = summary_storage_ids(original, entry.get("key"))
        if sid in seen:
            REPORT.fail(where, "storage %r listed twice" % sid)
        seen.add(sid)
        info = original.storages.get(sid)
        if info is None:
            REPORT.fail(where, "storage %r is not in the input" % entry.get("key"))
            continue
        if entry.get("recorded") != info["location"]:
            REPORT.fail(where, "storage %r: recorded %r, the input records %r" % (
                sid, entry.get("recorded"), info["location"]))
        out_key = entry.get("output_key", entry.get("key"))
        if original.format == "torch-legacy":
            out_sid = "data/" + str(out_key)
        else:
            out_sid = sid
            if str(out_key) not in (str(entry.get("key")),):
                REPORT.fail(where, "storage %r: output_key %r differs from key (zip input keeps keys)"
                            % (entry.get("key"), out_key))
        case.key_map[sid] = out_sid
        case.planned[out_sid] = entry.get("planned")
        if not isinstance(entry.get("planned"), str) or not entry.get("planned"):
            REPORT.fail(where, "storage %r: planned tag %r" % (sid, entry.get("planned")))
    missing = [k for k in original.storages if k not in seen]
    if missing:
        REPORT.fail(where, "input storages missing from the summary: %s" % short(missing))
    if len(set(case.key_map.values())) != len(case.key_map):
        REPORT.fail(where, "two input storages share one output key")
    if case.expect_path and case.expect_path != "-":
        try:
            with open(case.expect_path, encoding="utf-8") as f:
                case.expect = json.load(f)
        except Exception as e:
            REPORT.fail(case.where("expect"), "cannot read %s: %s" % (case.expect_path, e))
    return True


def check_records(original, case):
    where = case.where("records")
    out = case.archive
    if out.zip is None:
        REPORT.fail(where, "REMAPPED is not a zip archive (first bytes %r)" % out.data[:8])
        return
    if original.format in ("torch-zip", "torchscript"):
        if out.format != original.format:
            REPORT.fail(where, "REMAPPED reads as %s, the input is %s" % (out.format, original.format))
        names_in = [r.name for r in original.records]
        names_out = [r.name for r in out.records]
        if names_in != names_out:
            REPORT.fail(where, "record names/order differ: input %s, output %s" % (
                short(_diff_hint(names_in, names_out), 400), ""))
        by_offset = [r.name for r in sorted(out.records, key=lambda r: r.info.header_offset)]
        if by_offset != names_out:
            REPORT.fail(where, "central directory order differs from the order in the file")
        for rec in out.records:
            src = original.by_name.get(rec.name)
            if src is None:
                continue
            short_name = out.short(rec.name)
            if short_name == SERIALIZATION_ID:
                if not re.fullmatch(rb"[0-9]{40}", out.read(rec.name)):
                    REPORT.fail(where, "%s is not 40 digits" % rec.name)
                continue
            if short_name in PICKLE_RECORDS:
                continue
            if rec.info.compress_type != src.info.compress_type:
                REPORT.fail(where, "%s: compression %d, input %d" % (
                    rec.name, rec.info.compress_type, src.info.compress_type))
            if rec.raw != src.raw:
                REPORT.fail(where, "%s: bytes differ from the input (%d vs %d bytes stored)" % (
                    rec.name, len(rec.raw), len(src.raw)))
            elif rec.info.CRC != src.info.CRC or rec.info.file_size != src.info.file_size:
                REPORT.fail(where, "%s: CRC/size in the central directory differ from the input"
                            % rec.name)
        if (SERIALIZATION_ID in original.short_names()) != (SERIALIZATION_ID in out.short_names()):
            REPORT.fail(where, ".data/serialization_id present in one file only")
    elif original.format == "torch-legacy":
        short_names = out.short_names()
        if not short_names or short_names[0] != "data.pkl":
            REPORT.fail(where, "first record is %r, not data.pkl" % (short_names[:1],))
        if "version" not in short_names and ".data/version" not in short_names:
            REPORT.fail(where, "no version record")
        data_records = [n for n in short_names if n.startswith("data/")]
        wanted = sorted(set(case.key_map.values()))
        if sorted(data_records) != wanted:
            REPORT.fail(where, "storage records %s, expected %s" % (short(sorted(data_records)),
                                                                   short(wanted)))
        if original.legacy_bytes is None:
            REPORT.skip(where, "legacy storage bytes not parsed (%s); compared sizes only"
                        % original.legacy_error)
        for sid, out_sid in case.key_map.items():
            name = (out.prefix + "/" if out.prefix else "") + out_sid
            if name not in out.by_name:
                continue
            got = out.read(name)
            info = original.storages[sid]
            if original.legacy_bytes is not None and sid in original.legacy_bytes:
                if got != original.legacy_bytes[sid]:
                    REPORT.fail(where, "%s differs from legacy storage %s (%d vs %d bytes)" % (
                        out_sid, sid, len(got), len(original.legacy_bytes[sid])))
            else:
                es = STORAGE_ELEMENT_SIZE.get(info["cls"])
                if es is not None and isinstance(info["numel"], int) and len(got) != info["numel"] * es:
                    REPORT.fail(where, "%s has %d bytes, storage %s has %d" % (
                        out_sid, len(got), sid, info["numel"] * es))
    # Framing: stored storage records, payloads aligned as torch.save aligns them.
    alignment = 64
    if ".storage_alignment" in out.short_names():
        try:
            alignment = int(out.read(out.prefix + "/.storage_alignment"))
        except Exception:
            pass
    for rec in out.records:
        if rec.payload_offset % alignment:
            REPORT.fail(where, "%s: payload at offset %d, not a multiple of %d" % (
                rec.name, rec.payload_offset, alignment))
            break
    for rec in out.records:
        if rec.local_name.decode("utf-8", "replace") != rec.name:
            REPORT.fail(where, "local header name %r differs from central %r" % (rec.local_name, rec.name))
            break
    for sid in case.planned:
        name = (out.prefix + "/" if out.prefix else "") + sid
        rec = out.by_name.get(name)
        if rec is not None and rec.info.compress_type != 0:
            REPORT.fail(where, "%s is compressed (storages must be stored)" % name)


def _diff_hint(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return {"index": i, "input": a[i:i + 3], "output": b[i:i + 3], "counts": (len(a), len(b))}
    return {"counts": (len(a), len(b)), "input_tail": a[len(b):len(b) + 3], "output_tail": b[len(a):len(a) + 3]}


class TreeComparer:
    """Compares ORIGINAL's pickles with REMAPPED's, node for node."""

    def __init__(self, original, case, where):
        self.original, self.case, self.where = original, case, where
        self.pair = {}
        self.rpair = {}
        self.tags = {}  # output storage id -> tags seen in REMAPPED's persistent ids
        self.device_args = []  # (path, original device node, remapped device node)
        self.failed = 0
        self.folder = "data"

    def fail(self, path, message):
        self.failed += 1
        if self.failed <= 8:
            REPORT.fail(self.where, "%s: %s" % (path or "<root>", message))
        elif self.failed == 9:
            REPORT.fail(self.where, "more differences not shown")

    def compare(self, a, b, path):
        # Mutable nodes: the sharing (memo) structure must be the same in both.
        if isinstance(a, (list, PDict, PSet, Call)):
            if id(a) in self.pair:
                if self.pair[id(a)] is not b:
                    self.fail(path, "object shared in the input is not the same object here")
                return
            if id(b) in self.rpair and self.rpair[id(b)] is not a:
                self.fail(path, "output shares an object that the input keeps apart")
                return
            self.pair[id(a)] = b
            self.rpair[id(b)] = a
        if isinstance(a, PersId):
            self.compare_persid(a, b, path)
            return
        if type(a) is not type(b):
            if isinstance(a, Str8) and isinstance(b, str):
                try:
                    if a.text.encode("latin-1").decode("utf-8") == b:
                        return
                except UnicodeError:
                    pass
            self.fail(path, "%s in the input, %s in the output (%s vs %s)" % (
                type(a).__name__, type(b).__name__, short(a, 80), short(b, 80)))
            return
        if isinstance(a, (list, tuple)):
            if len(a) != len(b):
                self.fail(path, "length %d vs %d" % (len(a), len(b)))
                return
            for i, (x, y) in enumerate(zip(a, b)):
                self.compare(x, y, "%s[%d]" % (path, i))
        elif isinstance(a, PDict):
            self.compare_pairs(a.pairs, b.pairs, path)
        elif isinstance(a, PSet):
            if a.frozen != b.frozen or len(a.items) != len(b.items):
                self.fail(path, "sets differ")
                return
            for i, (x, y) in enumerate(zip(a.items, b.items)):
                self.compare(x, y, "%s{%d}" % (path, i))
        elif isinstance(a, Call):
            self.compare_call(a, b, path)
        else:
            if a != b:
                self.fail(path, "%s in the input, %s in the output" % (short(a, 80), short(b, 80)))

    def compare_pairs(self, pa, pb, path):
        if len(pa) != len(pb):
            self.fail(path, "%d items in the input, %d in the output" % (len(pa), len(pb)))
            return
        for i, ((ka, va), (kb, vb)) in enumerate(zip(pa, pb)):
            label = text_of(ka) if text_of(ka) is not None else repr(ka)
            self.compare(ka, kb, "%s{key %d}" % (path, i))
            self.compare(va, vb, "%s.%s" % (path, label) if path else label)

    def compare_call(self, a, b, path):
        if a.kind != b.kind:
            self.fail(path, "%s in the input, %s in the output" % (a.kind, b.kind))
            return
        self.compare(a.func, b.func, path + "<func>")
        self.compare_args(a.func, a.args, b.args, path)
        if len(a.builds) != len(b.builds):
            self.fail(path, "BUILD count differs")
        else:
            for x, y in zip(a.builds, b.builds):
                self.compare(x, y, path)
        if a.appends or b.appends:
            self.compare(a.appends, b.appends, path + "<appends>")
        if a.setitems or b.setitems:
            self.compare_pairs(a.setitems, b.setitems, path)

    def compare_args(self, func, args_a, args_b, path):
        """Arguments of a call to `func`; a device argument (section 3.1) may differ: it is
        recorded and checked against the expectations instead."""
        key = (func.module, func.name) if isinstance(func, Global) else None
        ok = isinstance(args_a, tuple) and isinstance(args_b, tuple) and len(args_a) == len(args_b)
        if ok and key == ("torch._tensor", "_rebuild_from_type_v2") and len(args_a) == 4:
            # _rebuild_from_type_v2(func, new_type, args, state): args are func's arguments.
            for i, (x, y) in enumerate(zip(args_a, args_b)):
                if i == 2:
                    self.compare_args(args_a[0], x, y, "%s<arg 2>" % path)
                else:
                    self.compare(x, y, "%s<arg %d>" % (path, i))
            return
        device_index = DEVICE_ARGUMENT.get(key)
        if not ok or device_index is None or len(args_a) <= device_index:
            self.compare(args_a, args_b, path + "<args>")
            return
        for i, (x, y) in enumerate(zip(args_a, args_b)):
            if i != device_index:
                self.compare(x, y, "%s<arg %d>" % (path, i))
                continue
            before, after = device_text(x), device_text(y)
            if after is None:
                self.fail(path, "device argument %s is not a device" % short(y))
                continue
            name = path.split("<", 1)[0]
            self.device_args.append((name, before, after))
            want = (self.case.expect.get("tensor_devices") or {}).get(name)
            if want is not None and after != want:
                self.fail(path, "device argument %s (was %s), expected %s" % (after, before, want))

    def compare_persid(self, a, b, path):
        sa = storage_pid(a)
        if sa is None:
            pid = a.pid
            # A legacy ('module', class, source_file, source) id: the zip format has none; the
            # copy must name the class itself (what torch's legacy loader returns for it).
            if isinstance(pid, tuple) and pid and text_of(pid[0]) == "module" and not isinstance(b, PersId):
                self.compare(pid[1], b, path + "<module class>")
                return
            if not isinstance(b, PersId):
                self.fail(path, "persistent id replaced by %s" % short(b, 80))
                return
            self.compare(a.pid, b.pid, path + "<pid>")
            return
        sb = storage_pid(b)
        if sb is None:
            self.fail(path, "storage persistent id replaced by %s" % short(b, 80))
            return
        cls_a, key_a, loc_a, numel_a, view_a = sa
        cls_b, key_b, loc_b, numel_b, view_b = sb
        if self.original.format == "torch-legacy":
            sid_a = key_a
            sid_b = "data/" + str(key_b)
            if len(b.pid) != 5:
                self.fail(path, "zip persistent id with %d elements" % len(b.pid))
            if view_a is not None:
                self.fail(path, "legacy view metadata %r not handled by this verifier" % (view_a,))
        else:
            sid_a = self.folder + "/" + str(key_a)
            sid_b = self.folder + "/" + str(key_b)
            if len(a.pid) != len(b.pid):
                self.fail(path, "persistent id length %d vs %d" % (len(a.pid), len(b.pid)))
        if not isinstance(b.pid[1], Global) or not isinstance(a.pid[1], Global) or a.pid[1] != b.pid[1]:
            self.fail(path, "storage class %r vs %r" % (a.pid[1], b.pid[1]))
        if numel_a != numel_b or type(numel_a) is not type(numel_b):
            self.fail(path, "storage numel %r vs %r" % (numel_a, numel_b))
        want_sid = self.case.key_map.get(sid_a)
        if want_sid is None:
            self.fail(path, "input storage %s is not in the summary" % sid_a)
        elif sid_b != want_sid:
            self.fail(path, "storage key %s, the summary says input %s -> %s" % (sid_b, sid_a, want_sid))
        self.tags.setdefault(sid_b, set()).add(loc_b)
        if not isinstance(b.pid[3], str):
            self.fail(path, "location tag is a %s, not a str" % type(b.pid[3]).__name__)
        if not isinstance(b.pid[2], str):
            self.fail(path, "storage key is a %s, not a str" % type(b.pid[2]).__name__)


def device_text(node):
    """'cuda:1' for a device argument given as a str or as torch.device('cuda', 1); else None."""
    if isinstance(node, (str, Str8)):
        return text_of(node)
    if isinstance(node, Call) and node.kind == "reduce" and isinstance(node.func, Global) and \
            (node.func.module, node.func.name) == ("torch", "device") and isinstance(node.args, tuple):
        parts = node.args
        if len(parts) == 1 and isinstance(text_of(parts[0]), str):
            return text_of(parts[0])
        if len(parts) == 2 and isinstance(text_of(parts[0]), str) and isinstance(parts[1], int):
            return "%s:%d" % (text_of(parts[0]), parts[1])
    return None


def check_pickles(original, case):
    where = case.where("pickle")
    out = case.archive
    if out.pickle_errors:
        REPORT.fail(where, "cannot read the output's pickles: %s" % out.pickle_errors)
        return
    if original.pickle_errors:
        REPORT.skip(where, "the input's pickles are not readable (%s)" % original.pickle_errors)
        return
    cmp = TreeComparer(original, case, where)
    if original.format == "torch-legacy":
        pairs = [("main", "data.pkl", "data")]
    else:
        pairs = [(n, n, PICKLE_FOLDERS[n]) for n in original.pickles]
    for name_in, name_out, folder in pairs:
        if name_out not in out.pickles:
            REPORT.fail(where, "output has no %s" % name_out)
            continue
        cmp.folder = folder
        cmp.compare(original.pickles[name_in], out.pickles[name_out], "")
    extra = [n for n in out.pickles if n not in [p[1] for p in pairs]]
    if extra:
        REPORT.fail(where, "output has pickles the input has not: %s" % extra)
    # Static tags: the output's persistent ids say what the summary planned.
    for sid, tags in cmp.tags.items():
        want = case.planned.get(sid)
        if len(tags) != 1:
            REPORT.fail(case.where("tags"), "storage %s recorded with several tags %s" % (sid, sorted(tags)))
        elif want is not None and tags != {want}:
            REPORT.fail(case.where("tags"), "storage %s is recorded on %r in the output, planned %r" % (
                sid, sorted(tags)[0], want))
    for sid in case.planned:
        if sid not in cmp.tags:
            REPORT.fail(case.where("tags"), "planned storage %s has no persistent id in the output" % sid)


def run_static(original, case):
    if not check_summary(original, case):
        return False
    try:
        case.archive = Archive(case.remapped)
    except Exception as e:
        REPORT.fail(case.where("records"), "cannot read REMAPPED: %s" % e)
        return False
    check_records(original, case)
    check_pickles(original, case)
    return True


# =============================================================================================
# Torch checks
# =============================================================================================

torch = None


def import_torch():
    global torch
    import torch as _torch
    torch = _torch
    torch.set_num_threads(1)


_FIXTURE_CLASSES_IMPORTED = False


def import_fixture_classes():
    """Our own fixtures pickle classes of tests/fixtures/generate_fixtures.py as __main__.X."""
    global _FIXTURE_CLASSES_IMPORTED
    if _FIXTURE_CLASSES_IMPORTED:
        return
    _FIXTURE_CLASSES_IMPORTED = True
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.normpath(os.path.join(here, "..", "fixtures")))
    import generate_fixtures
    main = sys.modules["__main__"]
    for name in dir(generate_fixtures):
        value = getattr(generate_fixtures, name)
        if hasattr(main, name):  # never replace this script's own names (Recorder, ...)
            continue
        if isinstance(value, type) and value.__module__ == generate_fixtures.__name__:
            setattr(main, name, value)


def _decode(v):
    return v.decode("ascii") if isinstance(v, bytes) else v


class Recorder:
    """A map_location callable (or dict) that records the tag torch passes for each storage key;
    the key comes from wrapping the persistent_load torch installs on its unpickler."""

    def __init__(self):
        self.current_key = None
        self.tags = {}
        self.problems = []
        self.device_args = []

    def __call__(self, storage, location):
        key = self.current_key
        if key is None:
            self.problems.append("map_location called outside persistent_load (tag %r)" % location)
            return storage
        old = self.tags.setdefault(key, location)
        if old != location:
            self.problems.append("key %s restored with tags %r and %r" % (key, old, location))
        return storage

    def as_dict(self):
        rec = self

        class RecordingMap(dict):
            def get(self, location, default=None):
                if rec.current_key is None:
                    rec.device_args.append(str(location))
                    return location
                rec(None, location)
                return "cpu"

        return RecordingMap()

    def wrap(self, torch_persistent_load):
        rec = self

        def wrapped(pid):
            if not (isinstance(pid, tuple) and len(pid) >= 5 and _decode(pid[0]) == "storage"):
                return torch_persistent_load(pid)
            previous, rec.current_key = rec.current_key, str(_decode(pid[2]))
            try:
                return torch_persistent_load(pid)
            finally:
                rec.current_key = previous

        return wrapped

    def unpickler_class(self, base):
        rec = self

        class RecordingUnpickler(base):
            @property
            def persistent_load(self):
                return self._recording_persistent_load

            @persistent_load.setter
            def persistent_load(self, torch_persistent_load):
                self._recording_persistent_load = rec.wrap(torch_persistent_load)

        return RecordingUnpickler


def recorded_load(path, weights_only, use_dict=False):
    """torch.load with a recording map_location; returns (object, recorder)."""
    import pickle
    rec = Recorder()
    map_location = rec.as_dict() if use_dict else rec
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if weights_only:
            wou = torch._weights_only_unpickler
            saved = wou.Unpickler
            wou.Unpickler = rec.unpickler_class(saved)
            try:
                obj = torch.load(path, map_location=map_location, weights_only=True)
            finally:
                wou.Unpickler = saved
        else:
            module = types.ModuleType("recording_pickle")
            for attr in dir(pickle):
                if not attr.startswith("__"):
                    setattr(module, attr, getattr(pickle, attr))
            module.Unpickler = rec.unpickler_class(pickle._Unpickler)
            saved = torch.serialization.pickle
            torch.serialization.pickle = module  # Debian's 1.13 ignores pickle_module here
            try:
                obj = torch.load(path, map_location=map_location, pickle_module=module,
                                 weights_only=False)
            finally:
                torch.serialization.pickle = saved
    return obj, rec


def load_recorded(path, weights_only):
    try:
        return recorded_load(path, weights_only)
    except Exception as e:
        if "Callable map_location not supported" not in str(e):
            raise
    return recorded_load(path, weights_only, use_dict=True)


def plain_load(path, weights_only):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.load(path, weights_only=weights_only)


def first_line(e):
    text = "%s: %s" % (type(e).__name__, e)
    lines = [ln for ln in text.splitlines() if ln.strip()]
    # Weights-only errors put the real cause last.
    if len(lines) > 1 and "Weights only load failed" in lines[0]:
        cause = [ln for ln in lines if "WeightsUnpickler error" in ln or "Unsupported" in ln]
        return (lines[0][:120] + " ... " + (cause[-1] if cause else lines[-1]).strip())[:400]
    return text[:400].replace("\n", " ")


# --- value comparison ---------------------------------------------------------------------------

def untyped(t):
    s = t.untyped_storage() if hasattr(t, "untyped_storage") else t._storage()
    if isinstance(s, torch.storage.TypedStorage):  # 1.13 for tensor subclasses
        s = s.untyped() if hasattr(s, "untyped") else s._untyped_storage
    return s


def layout_of(t):
    if t.layout == torch.sparse_coo:
        return "sparse_coo"
    for name in ("sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc"):
        if hasattr(torch, name) and t.layout == getattr(torch, name):
            return name
    if getattr(t, "is_nested", False):
        return "nested"
    if t.is_quantized:
        return "quantized"
    if t.device.type == "meta":
        return "meta"
    return "strided"


def storage_less(t):
    try:
        return untyped(t)._cdata == 0 or (t.data_ptr() == 0 and t.numel() > 0)
    except Exception:
        return True


def join(prefix, part):
    return part if prefix == "" else prefix + "." + part


def key_str(k):
    if isinstance(k, bool):
        return str(k)
    if isinstance(k, int):
        return "%d" % k
    return str(k)


class ValueComparer:
    def __init__(self, where, expect):
        self.where = where
        self.expect = expect or {}
        self.pair = {}
        self.rpair = {}
        self.keep_alive = []
        self.storage_pair = {}
        self.storage_rpair = {}
        self.failed = 0
        self.tensors = 0
        self.storage_less_devices = {}

    def fail(self, path, message):
        self.failed += 1
        if self.failed <= 8:
            REPORT.fail(self.where, "%s: %s" % (path if path != "" else "<root>", message))
        elif self.failed == 9:
            REPORT.fail(self.where, "more value differences not shown")

    def _shared(self, a, b, path):
        """True when (a, b) was compared already; checks that sharing is the same."""
        if id(a) in self.pair:
            if self.pair[id(a)] is not b:
                self.fail(path, "object shared in the input is a different object here")
            return True
        if id(b) in self.rpair and self.rpair[id(b)] is not a:
            self.fail(path, "object shared here is two objects in the input")
            return True
        self.pair[id(a)] = b
        self.rpair[id(b)] = a
        return False

    def compare(self, a, b, path=""):
        if type(a) is not type(b):
            self.fail(path, "type %s in the input, %s in the output" % (
                type(a).__qualname__, type(b).__qualname__))
            return
        if isinstance(a, torch.Tensor):
            if self._shared(a, b, path):
                return
            self.tensor(a, b, path)
            return
        if a is None or isinstance(a, (bool, int, str, bytes)):
            if a != b:
                self.fail(path, "%s in the input, %s in the output" % (short(a, 80), short(b, 80)))
            return
        if isinstance(a, float):
            if struct.pack(">d", a) != struct.pack(">d", b):
                self.fail(path, "%r in the input, %r in the output" % (a, b))
            return
        if isinstance(a, complex):
            if struct.pack(">dd", a.real, a.imag) != struct.pack(">dd", b.real, b.imag):
                self.fail(path, "%r in the input, %r in the output" % (a, b))
            return
        if isinstance(a, (torch.dtype, torch.device, torch.layout, torch.memory_format)) or \
                isinstance(a, type) or isinstance(a, (types.FunctionType, types.BuiltinFunctionType)):
            if a != b:
                self.fail(path, "%r in the input, %r in the output" % (a, b))
            return
        if hasattr(torch, "qscheme") and isinstance(a, torch.qscheme):
            if a != b:
                self.fail(path, "%r vs %r" % (a, b))
            return
        if isinstance(a, torch.jit.ScriptModule):
            a, b = a._c, b._c
        if isinstance(a, torch._C.ScriptObject) and not isinstance(a, torch._C.ScriptModule):
            # A TorchScript custom-class object (quantized packed params, LSTM cell params): equal
            # when the states it gives back (its unpacked tensors) are; the pair of states is kept
            # alive so that their ids are not reused during the walk.
            state_a, state_b = a.__getstate__(), b.__getstate__()
            self.keep_alive.append((state_a, state_b))
            self.compare(state_a, state_b, path + "<state>")
            return
        if isinstance(a, torch._C.ScriptModule):
            if self._shared(a, b, path):
                return
            attrs_a = torch._C._jit_debug_module_iterators(a)["named_attributes"]
            attrs_b = torch._C._jit_debug_module_iterators(b)["named_attributes"]
            names_a = [n for n, _ in attrs_a]
            names_b = [n for n, _ in attrs_b]
            if names_a != names_b:
                self.fail(path, "TorchScript attributes %s vs %s" % (short(names_a), short(names_b)))
                return
            for (n, va), (_, vb) in zip(attrs_a, attrs_b):
                self.compare(va, vb, join(path, n))
            return
        if isinstance(a, (list, tuple)):
            if isinstance(a, list) and self._shared(a, b, path):
                return
            if len(a) != len(b):
                self.fail(path, "length %d vs %d" % (len(a), len(b)))
                return
            for i, (x, y) in enumerate(zip(a, b)):
                self.compare(x, y, join(path, "%d" % i))
            return
        if isinstance(a, dict):
            if self._shared(a, b, path):
                return
            ka, kb = list(a.keys()), list(b.keys())
            if len(ka) != len(kb):
                self.fail(path, "keys %s vs %s" % (short(ka), short(kb)))
                return
            for x, y in zip(ka, kb):
                self.compare(x, y, path + "{key}")
            for k in ka:
                self.compare(a[k], b[k], join(path, key_str(k)))
            da, db = getattr(a, "__dict__", None), getattr(b, "__dict__", None)
            if da or db:
                self.compare(dict(da or {}), dict(db or {}), path + "<attributes>")
            return
        if isinstance(a, (set, frozenset)):
            if a != b:
                self.fail(path, "sets differ")
            return
        state_a = getattr(a, "__dict__", None)
        if isinstance(state_a, dict):
            if self._shared(a, b, path):
                return
            state_b = b.__dict__
            if list(state_a) != list(state_b):
                self.fail(path, "attributes %s vs %s" % (short(list(state_a)), short(list(state_b))))
                return
            module_like = all(k in state_a for k in ("_parameters", "_buffers", "_modules"))
            for k in state_a:
                va, vb = state_a[k], state_b[k]
                if module_like and k in ("_parameters", "_buffers", "_modules") and isinstance(va, dict):
                    if self._shared(va, vb, path):
                        continue
                    if list(va) != list(vb):
                        self.fail(path, "%s keys %s vs %s" % (k, short(list(va)), short(list(vb))))
                        continue
                    for kk in va:
                        self.compare(va[kk], vb[kk], join(path, key_str(kk)))
                else:
                    self.compare(va, vb, join(path, k))
            return
        if hasattr(a, "tobytes") and hasattr(a, "dtype") and hasattr(a, "shape"):  # numpy
            if a.dtype != b.dtype or a.shape != b.shape or a.tobytes() != b.tobytes():
                self.fail(path, "arrays differ")
            return
        try:
            equal = a == b
            equal = bool(equal)
        except Exception:
            equal = repr(a) == repr(b)
        if not equal and type(a).__eq__ is not object.__eq__:
            self.fail(path, "%s vs %s" % (short(a, 80), short(b, 80)))

    # --- tensors --------------------------------------------------------------------------------
    def tensor(self, a, b, path):
        self.tensors += 1
        la, lb = layout_of(a), layout_of(b)
        if la != lb:
            self.fail(path, "layout %s vs %s" % (la, lb))
            return
        for what in ("dtype", "requires_grad"):
            if getattr(a, what) != getattr(b, what):
                self.fail(path, "%s %r vs %r" % (what, getattr(a, what), getattr(b, what)))
        if la != "nested" and tuple(a.shape) != tuple(b.shape):
            self.fail(path, "shape %s vs %s" % (tuple(a.shape), tuple(b.shape)))
            return
        for bit in ("is_conj", "is_neg"):
            if hasattr(a, bit) and getattr(a, bit)() != getattr(b, bit)():
                self.fail(path, "%s differs" % bit)
        if la == "sparse_coo":
            if a.is_coalesced() != b.is_coalesced():
                self.fail(path, "is_coalesced differs")
            self.compare(a._indices(), b._indices(), path + "[indices]")
            self.compare(a._values(), b._values(), path + "[values]")
        elif la in ("sparse_csr", "sparse_bsr"):
            self.compare(a.crow_indices(), b.crow_indices(), path + "[crow_indices]")
            self.compare(a.col_indices(), b.col_indices(), path + "[col_indices]")
            self.compare(a.values(), b.values(), path + "[values]")
        elif la in ("sparse_csc", "sparse_bsc"):
            self.compare(a.ccol_indices(), b.ccol_indices(), path + "[ccol_indices]")
            self.compare(a.row_indices(), b.row_indices(), path + "[row_indices]")
            self.compare(a.values(), b.values(), path + "[values]")
        elif la == "nested":
            self.compare(a.values(), b.values(), path + "[buffer]")
            self.compare(a._nested_tensor_size(), b._nested_tensor_size(), path + "[sizes]")
            self.compare(a._nested_tensor_strides(), b._nested_tensor_strides(), path + "[strides]")
            self.compare(a._nested_tensor_storage_offsets(), b._nested_tensor_storage_offsets(),
                         path + "[storage_offsets]")
        else:
            self.geometry(a, b, path)
            if la == "meta":
                if b.device.type != "meta":
                    self.fail(path, "meta tensor loads on %s" % b.device)
            elif storage_less(a) or storage_less(b):
                if storage_less(a) != storage_less(b):
                    self.fail(path, "storage-less in one file only")
                self.storage_less_devices[path] = (str(a.device), str(b.device))
            else:
                self.storage(a, b, path)
            if la == "quantized":
                self.quantizer(a, b, path)
        # Python state carried by the tensor (subclass attributes, Parameter state).
        da, db = getattr(a, "__dict__", None), getattr(b, "__dict__", None)
        if da or db:
            self.compare(dict(da or {}), dict(db or {}), path + "<attributes>")

    def geometry(self, a, b, path):
        if tuple(a.stride()) != tuple(b.stride()):
            self.fail(path, "stride %s vs %s" % (tuple(a.stride()), tuple(b.stride())))
        if a.storage_offset() != b.storage_offset():
            self.fail(path, "storage_offset %d vs %d" % (a.storage_offset(), b.storage_offset()))

    def storage(self, a, b, path):
        sa, sb = untyped(a), untyped(b)
        pa, pb = sa._cdata, sb._cdata
        if pa in self.storage_pair:
            if self.storage_pair[pa] != pb:
                self.fail(path, "shares a storage with another tensor in the input, not here")
            return
        if pb in self.storage_rpair:
            self.fail(path, "shares a storage with another tensor here, not in the input")
            return
        self.storage_pair[pa] = pb
        self.storage_rpair[pb] = pa
        if sa.nbytes() != sb.nbytes():
            self.fail(path, "storage has %d bytes in the input, %d here" % (sa.nbytes(), sb.nbytes()))
            return
        ua = torch.empty(0, dtype=torch.uint8).set_(sa)
        ub = torch.empty(0, dtype=torch.uint8).set_(sb)
        if not torch.equal(ua, ub):
            diff = (ua != ub).nonzero()
            self.fail(path, "storage bytes differ (first at byte %d of %d)" % (int(diff[0]), sa.nbytes()))

    def quantizer(self, a, b, path):
        if a.qscheme() != b.qscheme():
            self.fail(path, "qscheme %r vs %r" % (a.qscheme(), b.qscheme()))
            return
        if a.qscheme() in (torch.per_tensor_affine, torch.per_tensor_symmetric):
            self.compare(a.q_scale(), b.q_scale(), path + "[q_scale]")
            self.compare(a.q_zero_point(), b.q_zero_point(), path + "[q_zero_point]")
        else:
            self.compare(a.q_per_channel_scales(), b.q_per_channel_scales(), path + "[q_scales]")
            self.compare(a.q_per_channel_zero_points(), b.q_per_channel_zero_points(),
                         path + "[q_zero_points]")
            self.compare(a.q_per_channel_axis(), b.q_per_channel_axis(), path + "[axis]")
        if not torch.equal(a.int_repr(), b.int_repr()):
            self.fail(path, "int_repr differs")


def torch_label():
    return "torch %s" % torch.__version__


def run_torch(original_path, original, cases, trusted):
    tl = torch_label()
    # (a) how ORIGINAL loads under this torch
    if original.format == "torchscript":
        if not trusted:
            for case in cases:
                REPORT.skip(case.where(tl), "untrusted TorchScript archive: torch.load would hand it "
                                            "to torch.jit.load, a real unpickler; static checks only")
            return
        run_torch_script(original_path, cases, trusted)
        return
    mode = None
    errors = []
    try:
        orig_obj, orig_rec = load_recorded(original_path, weights_only=True)
        mode = True
    except Exception as e:
        errors.append("weights_only=True: " + first_line(e))
    if mode is None and trusted:
        import_fixture_classes()
        try:
            orig_obj, orig_rec = load_recorded(original_path, weights_only=False)
            mode = False
        except Exception as e:
            errors.append("weights_only=False: " + first_line(e))
    if mode is None:
        why = "; ".join(errors)
        for case in cases:
            if trusted:
                REPORT.skip(case.where(tl), "%s cannot load ORIGINAL (%s)" % (tl, why))
            else:
                REPORT.skip(case.where(tl), "ORIGINAL does not load with weights_only=True under %s "
                                            "(%s); static checks only" % (tl, why))
        return
    for p in orig_rec.problems:
        REPORT.fail("%s [%s]" % (os.path.basename(original_path), tl), "loading ORIGINAL: " + p)
    for case in cases:
        where = case.where(tl)
        if case.summary is None:
            continue
        try:
            obj, rec = load_recorded(case.remapped, weights_only=mode)
        except Exception as e:
            REPORT.fail(where, "ORIGINAL loads with weights_only=%s, REMAPPED does not: %s" % (
                mode, first_line(e)))
            continue
        for p in rec.problems:
            REPORT.fail(where, p)
        # (b) tags per output key
        check_torch_tags(case, rec, where)
        # (c) values
        cmp = ValueComparer(where + " values", case.expect)
        if not guarded(where, "comparing values", cmp.compare, orig_obj, obj):
            continue
        check_storage_less(case, cmp, where)
        # plain torch.load when everything is planned on the CPU
        if all(t == "cpu" for t in case.planned.values()):
            try:
                plain = plain_load(case.remapped, weights_only=mode)
            except Exception as e:
                REPORT.fail(where, "every storage is planned on cpu, but plain torch.load("
                                   "weights_only=%s) fails: %s" % (mode, first_line(e)))
            else:
                cmp2 = ValueComparer(where + " plain load", case.expect)
                guarded(where, "comparing values after a plain load", cmp2.compare, orig_obj, plain)
                for t in iter_tensors(plain):
                    if t.device.type not in ("cpu", "meta"):
                        REPORT.fail(where, "plain load put a tensor on %s" % t.device)
                        break
        case.torch_mode = "weights_only=%s" % mode
        if mode and hasattr(torch.serialization, "config") and case.archive is not None \
                and case.archive.zip is not None:
            check_modern_offsets(case, orig_obj, where)


def guarded(where, what, func, *args):
    """Run a check; an exception inside it is a failure with its cause, not a crash."""
    try:
        func(*args)
        return True
    except Exception as e:
        import traceback
        frame = traceback.extract_tb(e.__traceback__)[-1]
        REPORT.fail(where, "%s raised %s (line %d)" % (what, first_line(e), frame.lineno))
        return False


def check_torch_tags(case, rec, where):
    got = {"data/" + k: v for k, v in rec.tags.items()}
    want = dict(case.planned)
    if set(got) != set(want):
        REPORT.fail(where, "torch restored storages %s, the summary plans %s" % (
            short(sorted(set(got) - set(want))), short(sorted(set(want) - set(got)))))
    for sid in sorted(set(got) & set(want)):
        if _decode(got[sid]) != want[sid]:
            REPORT.fail(where, "storage %s: torch sees tag %r, planned %r" % (sid, got[sid], want[sid]))


def check_storage_less(case, cmp, where):
    wanted = case.expect.get("tensor_devices") or {}
    for name, device in wanted.items():
        if name not in cmp.storage_less_devices:
            REPORT.fail(where, "expected a storage-less tensor %r" % name)
            continue
        got = cmp.storage_less_devices[name][1]
        if got != device:
            REPORT.fail(where, "tensor %r (no storage) is recorded on %s, expected %s" % (name, got, device))


def iter_tensors(obj, seen=None):
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, torch.Tensor):
        yield obj
        return
    if isinstance(obj, dict):
        for v in list(obj.values()):
            yield from iter_tensors(v, seen)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from iter_tensors(v, seen)
    elif isinstance(getattr(obj, "__dict__", None), dict) and not isinstance(obj, type):
        for v in list(obj.__dict__.values()):
            yield from iter_tensors(v, seen)


def check_modern_offsets(case, orig_obj, where):
    """torch 2.x: mmap=True reads storages at the record offsets of the local headers; with
    .format_version kept, calculate_storage_offsets recomputes them from torch.save's framing."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            obj = torch.load(case.remapped, mmap=True, weights_only=True, map_location="cpu")
    except Exception as e:
        REPORT.fail(where, "torch.load(mmap=True) fails: %s" % first_line(e))
        return
    ValueComparer(where + " mmap", case.expect).compare(orig_obj, obj)
    names = case.archive.short_names()
    config = getattr(getattr(torch.utils, "serialization", None), "config", None)
    if ".format_version" in names and config is not None and hasattr(config.load, "calculate_storage_offsets"):
        old = config.load.calculate_storage_offsets
        config.load.calculate_storage_offsets = True
        os.environ["TORCH_SERIALIZATION_DEBUG"] = "1"
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                obj = torch.load(case.remapped, mmap=True, weights_only=True, map_location="cpu")
            ValueComparer(where + " computed offsets", case.expect).compare(orig_obj, obj)
        except Exception as e:
            REPORT.fail(where, "the file keeps .format_version but torch's computed storage offsets "
                               "do not match its framing: %s" % first_line(e))
        finally:
            config.load.calculate_storage_offsets = old
            del os.environ["TORCH_SERIALIZATION_DEBUG"]


def run_torch_script(original_path, cases, trusted):
    tl = torch_label()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            orig = torch.jit.load(original_path, map_location="cpu")
    except Exception as e:
        for case in cases:
            REPORT.skip(case.where(tl), "%s cannot torch.jit.load ORIGINAL (%s)" % (tl, first_line(e)))
        return
    for case in cases:
        where = case.where(tl)
        if case.summary is None:
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                obj = torch.jit.load(case.remapped, map_location="cpu")
        except Exception as e:
            REPORT.fail(where, "ORIGINAL loads with torch.jit.load, REMAPPED does not: %s" % first_line(e))
            continue
        ValueComparer(where + " values", case.expect).compare(orig, obj)
        if case.planned and all(t == "cpu" for t in case.planned.values()):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    plain = torch.jit.load(case.remapped)
                ValueComparer(where + " plain load", case.expect).compare(orig, plain)
            except Exception as e:
                REPORT.fail(where, "every storage is planned on cpu, but plain torch.jit.load fails: %s"
                            % first_line(e))
        # TorchScript tags are checked statically: torch.jit.load takes no callable.
        case.torch_mode = "torch.jit.load"


# =============================================================================================

def verify(original_path, cases, trusted, use_torch=True):
    """All checks of one ORIGINAL and its copies; prints the report, returns the exit status."""
    global REPORT
    REPORT = Report()
    try:
        original = Archive(original_path)
    except Exception as e:
        print("FAIL cannot read ORIGINAL %s: %s" % (original_path, e))
        return 1
    if original.format not in ("torch-zip", "torchscript", "torch-legacy"):
        print("FAIL ORIGINAL %s is not a torch zip, TorchScript or legacy file" % original_path)
        return 1
    for case in cases:
        guarded(case.where("static"), "the static checks", run_static, original, case)
    torch_part = "static only"
    if use_torch:
        import_torch()
        guarded(os.path.basename(original_path), "the torch checks", run_torch, original_path,
                original, cases, trusted)
        torch_part = torch_label()
    if REPORT.failures:
        print("%d failure(s): %s (%s)" % (REPORT.failures, os.path.basename(original_path), torch_part))
        return 1
    modes = sorted({c.torch_mode for c in cases if c.torch_mode})
    print("ok %s: %d copies, %s, %d storages; %s%s" % (
        os.path.basename(original_path), len(cases), original.format, len(original.storages),
        torch_part, (" (" + ", ".join(modes) + ")") if modes else " (torch checks skipped)"))
    return 0


def serve():
    """One request per stdin line, a JSON object {"original": path, "trusted": bool, "cases":
    [[remapped, summary, expect-or-null], ...]}; answers with the report lines, then a line
    "@@end STATUS". Lets a test suite pay for `import torch` once."""
    import_torch()
    print("@@ready %s" % torch_label())
    sys.stdout.flush()
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            request = json.loads(line)
            cases = [Case(r, s, e if e else None) for r, s, e in request["cases"]]
            status = verify(request["original"], cases, bool(request.get("trusted")),
                            not request.get("no_torch"))
        except Exception as e:
            print("FAIL bad request or verifier error: %s" % first_line(e))
            status = 1
        print("@@end %d" % status)
        sys.stdout.flush()
    return 0


def main(argv):
    if argv == ["--serve"]:
        return serve()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("original")
    ap.add_argument("remapped", nargs="?")
    ap.add_argument("summary", nargs="?")
    ap.add_argument("--expect", help="expectations for the positional case")
    ap.add_argument("--case", nargs=3, action="append", default=[],
                    metavar=("REMAPPED", "SUMMARY", "EXPECT"),
                    help="another remapped copy of ORIGINAL; EXPECT may be '-'")
    ap.add_argument("--trusted", action="store_true",
                    help="ORIGINAL is one of our fixtures: weights_only=False and torch.jit.load allowed")
    ap.add_argument("--no-torch", action="store_true", help="static checks only")
    args = ap.parse_args(argv)
    cases = []
    if args.remapped:
        if not args.summary:
            ap.error("REMAPPED needs SUMMARY_JSON")
        cases.append(Case(args.remapped, args.summary, args.expect))
    cases.extend(Case(r, s, e) for r, s, e in args.case)
    if not cases:
        ap.error("nothing to check")
    return verify(args.original, cases, args.trusted, not args.no_torch)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
