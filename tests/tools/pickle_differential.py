#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The pickle differential: CPython's unpicklers against this tool's pickle machine.

Random pickles (all protocols, text and binary opcodes) and mutations of seed pickles (the
fixtures written by real torch, the hostile generator's files) are run

  * through CPython's unpickler, both implementations (`_pickle.Unpickler` and
    `pickle._Unpickler`), under every interpreter given (Python 3.11, the sid root's 3.14), in a
    child process with a timeout, an address-space limit and no network (`unshare -n` as root).
    Its find_class is an inert recorder: it imports nothing and returns stub classes; EXT codes
    are registered in copyreg so that they too reach find_class; persistent_load returns a stub.
    Nothing a pickle names is ever imported or called;
  * through this tool's machine and safety verdict (the test-only `pickle-probe`).

A disagreement is a pickle on which CPython reaches a global (or an extension code) the machine
does not name, or completes a pickle the machine does not read to its STOP (unless one of the
machine's own limits stopped it and the verdict says "cannot verify"), or that the verdict calls
"no pickle", or "known inert"/"needs allowlisting" without having read it to its end.

usage:
  pickle_differential.py --probe PATH [--python CMD]... [--seed N] [--count N | --minutes M]
                         [--save DIR] [--corpus DIR]... [--hostile-generator make_hostile.py]

Exit status: 0 when no disagreement was found, 1 otherwise (each is printed, and saved under
--save as NAME.pkl with NAME.json beside it), 2 on a usage or setup error.
"""
import argparse
import gzip
import hashlib
import io
import json
import os
import pickletools
import random
import shlex
import shutil
import struct
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile

# ---- the oracle: runs in a child process, under each interpreter -----------------------------------
ORACLE = r'''
import copyreg, io, json, pickle, signal, sys
try:
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
except Exception:
    pass
EXT_CODES = list(range(1, 300)) + [0x1234, 0xFFFF, 0x10000, 0x123456, 0x7FFFFFFF]
for code in EXT_CODES:
    copyreg.add_extension("__ckpt_ext__", "code%d" % code, code)

def _noop(*args, **kwargs):
    return None

class _AnyMethod:
    """A method that does nothing, found on the stub class and on its instances alike."""
    def __get__(self, obj, owner=None):
        return _noop

class _Meta(type):
    def __call__(cls, *args, **kwargs):
        return object.__new__(cls)
    def __setitem__(cls, key, value):
        pass

class Stub(metaclass=_Meta):
    def __new__(cls, *args, **kwargs):
        return object.__new__(cls if isinstance(cls, type) else type(cls))
    def __init__(self, *args, **kwargs):
        pass
    def __call__(self, *args, **kwargs):
        return Stub()
    def __setitem__(self, key, value):
        pass
    append = extend = add = __setstate__ = _AnyMethod()

_classes = {}
RECORD = []

def stub_for(module, name):
    key = (module, name)
    if key not in _classes:
        _classes[key] = _Meta("Stub", (Stub,), {})
    return _classes[key]

def make(base):
    class Recording(base):
        def find_class(self, module, name):
            RECORD.append((module, name))
            return stub_for(module, name)
        def persistent_load(self, pid):
            return Stub()
    return Recording

IMPLS = {"C": make(pickle.Unpickler), "Py": make(pickle._Unpickler)}

def encode(text):
    out = []
    for errors in ("surrogateescape", "surrogatepass"):
        try:
            out.append(text.encode("utf-8", errors).hex())
        except Exception:
            out.append("")
    return out

class Timeout(BaseException):
    pass

def alarm(signum, frame):
    raise Timeout()

signal.signal(signal.SIGALRM, alarm)
paths = open(sys.argv[1]).read().split("\n")
out = open(sys.argv[2], "a")
for path in paths:
    if not path:
        continue
    data = open(path, "rb").read()
    result = {"file": path}
    for impl, cls in IMPLS.items():
        del RECORD[:]
        copyreg.clear_extension_cache()
        f = io.BytesIO(data)
        signal.alarm(4)
        try:
            cls(f, encoding="utf-8", errors="surrogateescape").load()
            ok, error = True, ""
        except Timeout:
            ok, error = False, "timeout"
        except BaseException as e:
            ok, error = False, type(e).__name__ + ": " + str(e)[:200]
        finally:
            signal.alarm(0)
        result[impl] = {"ok": ok, "error": error, "pos": f.tell(),
                        "globals": [[encode(m), encode(n)] for m, n in RECORD
                                    if isinstance(m, str) and isinstance(n, str)]}
    out.write(json.dumps(result) + "\n")
    out.flush()
'''

# ---- building pickles -----------------------------------------------------------------------------
NAMES = [("os", "system"), ("posix", "system"), ("builtins", "eval"), ("builtins", "getattr"),
         ("collections", "OrderedDict"), ("torch._utils", "_rebuild_tensor_v2"), ("torch", "FloatStorage"),
         ("subprocess", "Popen"), ("sys", "path"), ("os", "environ"), ("argparse", "Namespace"),
         ("__builtin__", "set"), ("copy_reg", "_reconstructor"), ("torch", "Size"), ("numpy", "dtype"),
         ("os.path", "join"), ("pathlib", "os.system"), ("a b", "c\rd"), ("\u00e9t\u00e9", "x")]
EXT_USED = [1, 2, 7, 255, 256, 0x1234, 0xFFFF, 0x10000, 0x123456, 0x7FFFFFFF]


def weird_int(rng, n, for_key=False, long=False):
    """Text for the integer n as some CPython parser accepts it (or nearly: the oracle decides)."""
    forms = [str(n), "+%d" % n if n >= 0 else str(n), " %d" % n, "%d " % n, "\t%d\r" % n, "%d\x00junk" % n,
             "0%d" % n, "00%d" % n, "%d\x0b" % n]
    if n >= 0:
        forms += ["0x%x" % n, "0X%X" % n, "0o%o" % n, "0b%s" % bin(n)[2:], "0x_%x" % n]
    else:
        forms += ["-0x%x" % -n, "-0o%o" % -n]
    text = str(abs(n))
    if len(text) > 1:
        cut = rng.randrange(1, len(text))
        forms.append(("-" if n < 0 else "") + text[:cut] + "_" + text[cut:])
    if long:
        forms += [f + "L" for f in forms[:4]]
    if n in (0, 1) and not for_key:
        forms += ["-0" if n == 0 else "+1", " %d" % n, "%d\x00" % n]
    if rng.random() < 0.05:
        forms += ["", "_%d" % n, "%d__0" % n, "1e3", "0x", "--1", "\x00", "%d L" % n]
    return rng.choice(forms).encode("latin-1")


def weird_float(rng, x):
    forms = [repr(x), " %r" % x, "%r " % x, "%r\x00z" % x, "+%r" % x, "%rL" % x]
    text = repr(x)
    if text.replace(".", "").isdigit() and len(text) > 2:
        forms.append(text[0] + "_" + text[1:])
    forms += ["inf", "-inf", "nan", "1e999", "Infinity", "1E5", ".5", "5."]
    return rng.choice(forms).encode("latin-1")


def proto0_unicode(text):
    text = (text.replace("\\", "\\u005c").replace("\0", "\\u0000").replace("\n", "\\u000a")
            .replace("\r", "\\u000d").replace("\x1a", "\\u001a"))
    return text.encode("raw-unicode-escape")


class Builder:
    """A random pickle program over an abstract stack, valid more often than not."""

    def __init__(self, rng):
        self.rng = rng
        self.out = bytearray()
        self.stack = []  # abstract kinds
        self.marks = []
        self.memo = set()
        self.protocol = rng.randrange(0, 6)

    def emit(self, data):
        self.out += data

    def push(self, kind, data):
        self.emit(data)
        self.stack.append(kind)

    def top_index(self):
        return self.marks[-1] if self.marks else 0

    def avail(self):
        return len(self.stack) - self.top_index()

    def scalar(self):
        r, rng = self.rng.random(), self.rng
        n = rng.choice([0, 1, 2, 7, 255, 256, 65535, 65536, -1, -129, 2**31 - 1, -2**31, 2**40, 2**63 - 1,
                        -2**63, 2**64, 10**30, -10**25])
        if r < 0.25:
            self.push("int", b"I" + weird_int(rng, n) + b"\n")
        elif r < 0.35:
            self.push("int", b"L" + weird_int(rng, n, long=True) + b"\n")
        elif r < 0.45:
            if -2**31 <= n < 2**31:
                self.push("int", b"J" + struct.pack("<i", n) if n < 0 or n > 65535 else
                          (b"K" + bytes([n]) if n < 256 else b"M" + struct.pack("<H", n)))
            else:
                raw = n.to_bytes((n.bit_length() + 8) // 8, "little", signed=True)
                self.push("int", (b"\x8a" + bytes([len(raw)]) if rng.random() < 0.7 else
                                  b"\x8b" + struct.pack("<i", len(raw))) + raw)
        elif r < 0.5:
            self.push("bool", rng.choice([b"\x88", b"\x89", b"I01\n", b"I00\n"]))
        elif r < 0.55:
            self.push("none", b"N")
        elif r < 0.62:
            x = rng.choice([0.0, 1.5, -2.25, 1e300, 3.0])
            self.push("float", b"F" + weird_float(rng, x) + b"\n" if rng.random() < 0.6 else
                      b"G" + struct.pack(">d", x))
        elif r < 0.8:
            self.string(rng.choice(["", "a", "os", "system", "x" * 300, "\u00e9", "a\rb", "eval"]))
        elif r < 0.86:
            data = rng.choice([b"", b"abc", b"\x00" * 5])
            choice = rng.randrange(3)
            self.push("bytes", [b"C" + bytes([len(data)]), b"B" + struct.pack("<I", len(data)),
                                b"\x8e" + struct.pack("<Q", len(data))][choice] + data)
        elif r < 0.9:
            self.push("bytearray", b"\x96" + struct.pack("<Q", 2) + b"ab")
        else:
            kind, op = rng.choice([("list", b"]"), ("dict", b"}"), ("set", b"\x8f"), ("tuple", b")")])
            self.push(kind, op)

    def string(self, text):
        rng = self.rng
        data = text.encode("utf-8")
        choice = rng.randrange(6)
        if choice == 0 and "\n" not in text and "'" not in text and "\\" not in text:
            self.push("str", b"S'" + data + b"'\n")
        elif choice == 1:
            self.push("str", b"V" + proto0_unicode(text) + b"\n")
        elif choice == 2 and len(data) < 256:
            self.push("str", b"\x8c" + bytes([len(data)]) + data)
        elif choice == 3 and len(data) < 256:
            self.push("str", b"U" + bytes([len(data)]) + data)
        elif choice == 4:
            self.push("str", b"\x8d" + struct.pack("<Q", len(data)) + data)
        else:
            self.push("str", b"X" + struct.pack("<I", len(data)) + data)

    def global_(self):
        module, name = self.rng.choice(NAMES)
        r = self.rng.random()
        if r < 0.5 and "\n" not in module + name:
            self.push("global", b"c" + module.encode() + b"\n" + name.encode() + b"\n")
        elif r < 0.85:
            self.string(module)
            self.string(name)
            self.pop(2)
            self.push("global", b"\x93")
        else:
            code = self.rng.choice(EXT_USED)
            if code < 256:
                self.push("global", b"\x82" + bytes([code]))
            elif code < 65536:
                self.push("global", b"\x83" + struct.pack("<H", code))
            else:
                self.push("global", b"\x84" + struct.pack("<i", code))

    def pop(self, n):
        del self.stack[len(self.stack) - n:]

    def memo_op(self):
        rng = self.rng
        if self.memo and rng.random() < 0.5:
            key = rng.choice(sorted(self.memo))
            r = rng.random()
            if r < 0.5 or key >= 2**32:
                self.push("memo", b"g" + weird_int(rng, key, for_key=True) + b"\n")
            elif key < 256:
                self.push("memo", b"h" + bytes([key]))
            else:
                self.push("memo", b"j" + struct.pack("<I", key))
        elif self.avail():
            r = rng.random()
            key = rng.choice([len(self.memo), rng.randrange(0, 300), 2**32 - 1, 2**40, 10**22])
            if r < 0.2:
                self.emit(b"\x94")
                self.memo.add(len(self.memo))
                return
            if r < 0.6 or key >= 2**32:
                self.emit(b"p" + weird_int(rng, key, for_key=True) + b"\n")
            elif key < 256:
                self.emit(b"q" + bytes([key]))
            else:
                self.emit(b"r" + struct.pack("<I", key))
            self.memo.add(key)

    def mutate_op(self):
        """An opcode that changes what is under it: the family CPython accepts on more than lists."""
        rng = self.rng
        kind = rng.randrange(9)
        if kind == 0 and self.avail() >= 2:
            self.emit(b"a")
            self.pop(1)
        elif kind == 1 and self.avail() >= 1:
            self.emit(b"(" + rng.choice([b"", b"K\x01", b"K\x01K\x02"]) + b"e")
        elif kind == 2 and self.avail() >= 3:
            self.emit(b"s")
            self.pop(2)
        elif kind == 3 and self.avail() >= 1:
            self.emit(b"(" + rng.choice([b"", b"K\x00K\x01", b"K\x01"]) + b"u")
        elif kind == 4 and self.avail() >= 1:
            self.emit(b"(" + rng.choice([b"", b"K\x03"]) + b"\x90")
        elif kind in (5, 6) and self.avail() >= 1:
            state = rng.choice([b"N", b"}", b")", b"K\x00", b"NN\x86", b"N}\x86", b"}N\x86", b"]", b"\x89",
                                b"X\x00\x00\x00\x00", b"}X\x01\x00\x00\x00aK\x01s", b"N}X\x01\x00\x00\x00aK\x01s\x86",
                                b"K\x05"])
            self.emit(state + b"b")
        elif kind == 7 and self.avail() >= 2:
            self.emit(b"b")
            self.pop(1)
        elif self.avail() >= 1:
            self.emit(b"2")
            self.stack.append(self.stack[-1])

    def call_op(self):
        rng = self.rng
        self.global_()
        r = rng.random()
        self.scalar()
        self.emit(b"\x85")
        self.pop(1)
        self.stack.append("tuple")
        if r < 0.6:
            self.emit(b"R")
        elif r < 0.85:
            self.emit(b"\x81")
        else:
            self.push("dict", b"}")
            self.emit(b"\x92")
            self.pop(1)
        self.pop(2)
        self.stack.append("obj")

    def close_mark(self):
        rng = self.rng
        n = self.avail()
        inst = b"i" + rng.choice(NAMES)[0].encode() + b"\n" + rng.choice(NAMES)[1].encode() + b"\n"
        op = rng.choice([b"t", b"l", b"\x91", b"1", b"d" if n % 2 == 0 else b"t", b"o" if n else b"t", inst])
        self.emit(op)
        del self.stack[self.marks.pop():]
        if op != b"1":
            self.stack.append("tuple" if op == b"t" else "obj" if op[:1] in (b"o", b"i") else "list")

    def build(self, size):
        rng = self.rng
        if self.protocol >= 2:
            self.emit(b"\x80" + bytes([self.protocol]))
        while len(self.out) < size:
            r = rng.random()
            if r < 0.35:
                self.scalar()
            elif r < 0.45:
                self.global_()
            elif r < 0.55:
                self.call_op()
            elif r < 0.65:
                self.memo_op()
            elif r < 0.8:
                self.mutate_op()
            elif r < 0.87:
                self.emit(b"(")
                self.marks.append(len(self.stack))
            elif r < 0.93 and self.marks:
                self.close_mark()
            elif r < 0.96 and self.avail() >= 1:
                self.emit(rng.choice([b"\x85", b"Q", b"0"]))
                kind = rng.choice(["tuple", "pid", None])
                self.pop(1)
                if kind:
                    self.stack.append(kind)
            elif self.avail() >= 1:
                self.emit(b"P" + rng.choice([b"1", b"abc", b"a\rb"]) + b"\n")
                self.stack.append("pid")
        while self.marks:
            self.emit(b"t")
            del self.stack[self.marks.pop():]
            self.stack.append("tuple")
        if not self.stack:
            self.push("none", b"N")
        self.emit(b".")
        return bytes(self.out)


def random_pickle(rng):
    return Builder(rng).build(rng.choice([8, 30, 80, 200, 600]))


# ---- mutating seeds -------------------------------------------------------------------------------
def ops_of(data):
    """(opcode name, arg, start, end) of a pickle's opcodes up to its STOP; pickletools only parses."""
    out = []
    try:
        items = list(pickletools.genops(io.BytesIO(data)))
    except Exception:
        return None
    for i, (op, arg, pos) in enumerate(items):
        end = items[i + 1][2] if i + 1 < len(items) else pos + 1
        out.append((op.name, arg, pos, end))
    return out


def rewrite(rng, data):
    """The same pickle with some opcodes written in other forms CPython reads alike (text numbers,
    text memo keys, UNICODE lines); FRAMEs are dropped, as lengths change."""
    ops = ops_of(data)
    if not ops:
        return None
    out = bytearray()
    memo_count = 0
    keys = set()
    p = rng.uniform(0.1, 0.9)
    for name, arg, start, end in ops:
        raw = data[start:end]
        if name == "FRAME":
            continue
        change = rng.random() < p
        if name in ("BININT", "BININT1", "BININT2", "LONG1") and change:
            out += (b"I" + weird_int(rng, arg) if rng.random() < 0.6 else b"L" + weird_int(rng, arg, long=True)) + b"\n"
        elif name in ("NEWTRUE", "NEWFALSE") and change:
            out += b"I01\n" if name == "NEWTRUE" else b"I00\n"
        elif name in ("BINPUT", "LONG_BINPUT", "MEMOIZE", "PUT"):
            key = memo_count if name == "MEMOIZE" else arg
            if key not in keys:
                keys.add(key)
                memo_count += 1
            out += b"p" + weird_int(rng, key, for_key=True) + b"\n" if change else raw
        elif name in ("BINGET", "LONG_BINGET") and change:
            out += b"g" + weird_int(rng, arg, for_key=True) + b"\n"
        elif name in ("SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8") and change and isinstance(arg, str):
            out += b"V" + proto0_unicode(arg) + b"\n"
        elif name == "BINFLOAT" and change:
            out += b"F" + weird_float(rng, arg) + b"\n"
        else:
            out += raw
    return bytes(out)


SNIPPETS = [b"Nb", b"}b", b"NN\x86b", b"N}\x86b", b"(e", b"(u", b"(\x90", b"(K\x01e", b"(K\x01K\x02u",
            b"K\x01a", b"K\x00K\x01s", b"(K\x01\x90", b"\x88b", b")b", b"2", b"0", b"(1"]


def mutate(rng, data, seeds):
    r = rng.random()
    if r < 0.45:
        return rewrite(rng, data) or data
    ops = ops_of(data)
    b = bytearray(data)
    if r < 0.7 and ops:
        # A container opcode on whatever is on the stack there.
        _, _, start, end = rng.choice(ops[:-1] or ops)
        return bytes(b[:end] + rng.choice(SNIPPETS) + b[end:])
    if r < 0.8 and ops and len(ops) > 2:
        _, _, start, end = rng.choice(ops[:-1])
        return bytes(b[:start] + b[end:]) if rng.random() < 0.5 else bytes(b[:end] + b[start:end] + b[end:])
    if r < 0.9 and b:
        for _ in range(rng.randrange(1, 4)):
            i = rng.randrange(len(b))
            b[i] = rng.randrange(256) if rng.random() < 0.5 else b[i] ^ (1 << rng.randrange(8))
        return bytes(b)
    other = rng.choice(seeds)
    cut = rng.randrange(len(data) + 1)
    return bytes(data[:cut] + other[rng.randrange(len(other) + 1):])


# ---- seeds -----------------------------------------------------------------------------------------
def pickles_in(blob, depth=0):
    """Pickles a loader could find in a file: the file, zip/tar members, gzip contents, stacked ones."""
    found = []
    if depth > 2:
        return found
    try:
        if blob[:2] == b"PK" or zipfile.is_zipfile(io.BytesIO(blob)):
            with zipfile.ZipFile(io.BytesIO(blob)) as z:
                for info in z.infolist()[:50]:
                    if info.file_size < (1 << 20):
                        found += pickles_in(z.read(info.filename), depth + 1)
            return found
    except Exception:
        pass
    try:
        if blob[:2] == b"\x1f\x8b":
            return pickles_in(gzip.decompress(blob), depth + 1)
    except Exception:
        pass
    try:
        if len(blob) > 262 and blob[257:262] == b"ustar":
            with tarfile.open(fileobj=io.BytesIO(blob)) as t:
                for member in t.getmembers()[:50]:
                    if member.isfile() and member.size < (1 << 20):
                        found += pickles_in(t.extractfile(member).read(), depth + 1)
            return found
    except Exception:
        pass
    offset = 0
    while offset < len(blob) and len(found) < 8:
        ops = ops_of(blob[offset:])
        if not ops or ops[-1][0] != "STOP":
            break
        end = offset + ops[-1][3]
        if end - offset <= (64 << 10):
            found.append(blob[offset:end])
        offset = end
    return found


def load_seeds(dirs, limit=600):
    seeds = []
    for root in dirs:
        for folder, _, files in sorted(os.walk(root)):
            for name in sorted(files):
                if name.endswith((".json", ".tsv", ".md", ".py", ".txt")):
                    continue
                path = os.path.join(folder, name)
                try:
                    if os.path.getsize(path) > (32 << 20):
                        continue
                    with open(path, "rb") as f:
                        seeds += pickles_in(f.read())
                except OSError:
                    continue
    unique = sorted(set(seeds), key=lambda s: hashlib.sha1(s).hexdigest())
    return unique[:limit]


# ---- running both sides ----------------------------------------------------------------------------
def no_network(command):
    if os.geteuid() == 0 and shutil.which("unshare"):
        probe = subprocess.run(["unshare", "-n", "true"], capture_output=True)
        if probe.returncode == 0:
            return ["unshare", "-n", "--"] + command
    return command


def run_oracle(python, oracle_path, paths, work, timeout):
    """{path: result} for every path the oracle got through; a path it died on is left out."""
    results = {}
    remaining = list(paths)
    attempt = 0
    idle = 0
    while remaining:
        attempt += 1
        listing = os.path.join(work, "oracle-list-%d.txt" % attempt)
        output = os.path.join(work, "oracle-out-%d.jsonl" % attempt)
        with open(listing, "w") as f:
            f.write("\n".join(remaining))
        open(output, "w").close()
        stderr = b""
        try:
            stderr = subprocess.run(no_network(python + [oracle_path, listing, output]), timeout=timeout,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE).stderr
        except subprocess.TimeoutExpired:
            pass
        done = 0
        with open(output) as f:
            for line in f:
                try:
                    item = json.loads(line)
                except ValueError:
                    break
                results[item["file"]] = item
                done += 1
        idle = idle + 1 if done == 0 else 0
        if idle >= 3:
            raise RuntimeError("the oracle %s reads nothing: %s" % (" ".join(python), stderr.decode(errors="replace")[-500:]))
        remaining = remaining[done + 1:]  # past the one it died on, if it did
    return results


def run_probe(probe, paths):
    proc = subprocess.run([probe, "-"], input="\n".join(paths), capture_output=True, text=True, timeout=600)
    results = {}
    for line in proc.stdout.splitlines():
        item = json.loads(line)
        results[item["file"]] = item
    return results


def compare(machine, oracles):
    """The disagreements between the machine's view and every CPython run of one pickle."""
    problems = []
    names = {(m, n) for m, n in machine["globals"]}
    exts = set(machine["ext"])
    stopped_at_limit = machine["limit"] and machine["rating"] == "dangerous"
    # An opcode that runs past the end of its FRAME: pickle.py and 3.14's _pickle stop there, while
    # 3.11's _pickle, reading a BytesIO, takes the opcode's bytes from after the frame and reads on
    # (the probe's globals hold both readings, core/pickle/bufferedframes.h). The verdict must say
    # "cannot verify", naming the frame.
    frames_disagree = machine["rating"] == "dangerous" and any("FRAME" in c for c in machine["cannot_verify"])
    for interpreter, result in oracles.items():
        for impl in ("C", "Py"):
            run = result.get(impl)
            if not run:
                continue
            where = "%s %s" % (interpreter, impl)
            for (m8, mpass), (n8, npass) in run["globals"]:
                if m8 == "5f5f636b70745f6578745f5f":  # "__ckpt_ext__": an EXT code
                    code = int(bytes.fromhex(n8).decode()[4:])
                    if code not in exts and not stopped_at_limit:
                        problems.append("%s resolves extension code %d, which the machine does not see"
                                        % (where, code))
                    continue
                if (m8, n8) not in names and (mpass, npass) not in names and not stopped_at_limit:
                    problems.append("%s reaches the global %r.%r, which the machine does not name" % (
                        where, bytes.fromhex(m8 or mpass), bytes.fromhex(n8 or npass)))
            if not run["ok"]:
                continue
            if machine["rating"] == "no-pickle":
                problems.append("%s reads it to its STOP, but the verdict says no pickle" % where)
            if not machine["complete"] and not (frames_disagree and machine["buffered_complete"]):
                if not machine["limit"]:
                    problems.append("%s reads it to its STOP, but the machine stops: %s" % (where, machine["error"]))
                elif machine["rating"] != "dangerous":
                    problems.append("%s reads it to its STOP, the machine stops at a limit, yet the verdict "
                                    "says %s" % (where, machine["rating"]))
            elif not machine["frame"] and not frames_disagree and run["pos"] != machine["end"]:
                problems.append("%s ends the pickle at byte %d, the machine at byte %d" % (
                    where, run["pos"], machine["end"]))
    return sorted(set(problems))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--probe", required=True, help="the pickle-probe executable")
    parser.add_argument("--python", action="append", default=[],
                        help="an interpreter command for the oracle (repeatable; default /usr/bin/python3)")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--count", type=int, default=None, help="pickles to try (default 600)")
    parser.add_argument("--minutes", type=float, default=None, help="run for this long instead of --count")
    parser.add_argument("--batch", type=int, default=300)
    parser.add_argument("--save", default=None, help="folder for the disagreeing pickles")
    parser.add_argument("--corpus", action="append", default=[], help="folders of seed files (repeatable)")
    parser.add_argument("--hostile-generator", default=None, help="make_hostile.py: its files are seeds too")
    parser.add_argument("--keep-going", action="store_true", help="do not stop at the first batch with disagreements")
    args = parser.parse_args()

    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    rng = random.Random(seed)
    pythons = [shlex.split(p) for p in (args.python or ["/usr/bin/python3"])]
    if not os.access(args.probe, os.X_OK):
        print("pickle_differential: no probe at %s" % args.probe, file=sys.stderr)
        return 2
    work = tempfile.mkdtemp(prefix="ckpt-pickle-differential-", dir="/tmp")
    started = time.time()
    try:
        oracle_path = os.path.join(work, "oracle.py")
        with open(oracle_path, "w") as f:
            f.write(ORACLE)
        corpus = list(args.corpus)
        if args.hostile_generator:
            hostile = os.path.join(work, "hostile")
            subprocess.run([sys.executable, args.hostile_generator, hostile], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=300)
            corpus.append(hostile)
        seeds = load_seeds(corpus)
        seeds += [random_pickle(rng) for _ in range(20)]
        print("pickle differential: seed %d, %d seed pickles, oracles: %s" % (
            seed, len(seeds), "; ".join(" ".join(p) for p in pythons)), flush=True)
        unread = list(reversed(seeds))
        total = completed = named = 0
        found = {}
        batch_number = 0
        while True:
            if args.minutes is not None:
                if time.time() - started > args.minutes * 60:
                    break
            elif total >= (args.count or 600):
                break
            batch_number += 1
            folder = os.path.join(work, "batch")
            shutil.rmtree(folder, ignore_errors=True)
            os.makedirs(folder)
            size = args.batch if args.minutes is not None else min(args.batch, (args.count or 600) - total)
            paths = {}
            for i in range(size):
                r = rng.random()
                if unread:
                    data = unread.pop()  # every seed once as it is, first
                elif r < 0.3 or not seeds:
                    data = random_pickle(rng)
                elif r < 0.4:
                    data = rng.choice(seeds)
                else:
                    data = mutate(rng, rng.choice(seeds), seeds)
                    if rng.random() < 0.3:
                        data = mutate(rng, data, seeds)
                path = os.path.join(folder, "%05d.pkl" % i)
                with open(path, "wb") as f:
                    f.write(data)
                paths[path] = data
            machine = run_probe(args.probe, list(paths))
            oracle = {}
            for python in pythons:
                name = " ".join(python)
                for path, result in run_oracle(python, oracle_path, list(paths), work, timeout=120).items():
                    oracle.setdefault(path, {})[name] = result
            for path, data in paths.items():
                if path not in machine or path not in oracle:
                    continue
                problems = compare(machine[path], oracle[path])
                total += 1
                completed += any(run.get(impl, {}).get("ok") for run in oracle[path].values() for impl in ("C", "Py"))
                named += any(run.get(impl, {}).get("globals") for run in oracle[path].values() for impl in ("C", "Py"))
                if not problems:
                    continue
                digest = hashlib.sha1(data).hexdigest()[:16]
                if digest in found:
                    continue
                found[digest] = problems
                print("DISAGREEMENT %s (%d bytes): %s" % (digest, len(data), "; ".join(problems)), flush=True)
                print("  bytes: %r" % data[:300], flush=True)
                if args.save:
                    os.makedirs(args.save, exist_ok=True)
                    with open(os.path.join(args.save, digest + ".pkl"), "wb") as f:
                        f.write(data)
                    with open(os.path.join(args.save, digest + ".json"), "w") as f:
                        json.dump({"seed": seed, "problems": problems, "machine": machine[path],
                                   "cpython": oracle[path]}, f, indent=1)
            if found and not args.keep_going and args.minutes is None:
                break
        print("pickle differential: seed %d, %d pickles run through %d oracle interpreter(s) x 2 "
              "implementations and the machine in %.0f s (CPython read %d to their STOP and looked up a "
              "global in %d); %d disagreement(s)" % (
                  seed, total, len(pythons), time.time() - started, completed, named, len(found)), flush=True)
        return 1 if found else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except RuntimeError as error:  # an oracle interpreter that cannot run at all
        print("pickle_differential: %s" % error, file=sys.stderr)
        sys.exit(2)
