#!/usr/bin/env python3
"""Writes the malformed and hostile checkpoints of issue 9's regression tests, opcode by opcode.

These files are hostile or impossible on purpose, so no real torch can write them: each pickle is
assembled here from single opcodes (stored in a zip with torch's record names), and the tests
compare what ckpt-inspect makes of them with what torch itself says about the same values, asked
directly (never by unpickling these files). Never load them with a real unpickler: the first one
is built to run `touch /tmp/ckpt-inspector-hostile-marker` if a remap ever turned it into a
GLOBAL line.

    stack_global_newline.pt  a STACK_GLOBAL whose name holds a newline and opcodes after it; as a
                             text GLOBAL line it would call posix.system (torch refuses the file)
    stack_global_newline.naive-copy.pkl  the data.pkl a writer that made it a GLOBAL line wrote
    global_carriage_return.pt  GLOBAL 'collections\\r' 'OrderedDict': a different module from
                             'collections' to Python, which keeps the '\\r'
    global_not_utf8.pt       a GLOBAL whose module is not UTF-8
    stride_overflow.pt       views whose byte size overflows: shape [5] with stride 2^62 over a
                             16-byte storage, and shape [2, 3] with strides [2^62, 1]
    numel_overflow.pt        a FloatStorage of 2^62 elements (2^64 bytes) in a 16-byte record
    hostile_names.pt         tensor names and a global holding terminal escapes, newlines, quotes,
                             direction overrides and C1 controls
"""
import os
import struct
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
MARKER = "/tmp/ckpt-inspector-hostile-marker"


def unicode(text):
    data = text.encode("utf-8", "surrogatepass")
    return b"X" + struct.pack("<I", len(data)) + data


def integer(value):
    if 0 <= value < 256:
        return b"K" + bytes([value])
    if -(2**31) <= value < 2**31:
        return b"J" + struct.pack("<i", value)
    data = value.to_bytes(8, "little", signed=True)
    return b"\x8a" + bytes([len(data)]) + data


def int_tuple(values):
    return b"(" + b"".join(integer(v) for v in values) + b"t"


def global_line(module, name):
    return b"c" + module + b"\n" + name + b"\n"


def stack_global(module, name):
    return unicode(module) + unicode(name) + b"\x93"


def tensor(key, location, numel, size, stride, offset=0):
    """torch._utils._rebuild_tensor_v2(persistent storage, offset, size, stride, False, OrderedDict())"""
    storage = (b"(" + unicode("storage") + global_line(b"torch", b"FloatStorage") + unicode(key)
               + unicode(location) + integer(numel) + b"tQ")
    return (global_line(b"torch._utils", b"_rebuild_tensor_v2") + b"(" + storage + integer(offset)
            + int_tuple(size) + int_tuple(stride) + b"\x89" + global_line(b"collections", b"OrderedDict")
            + b")R" + b"tR")


def dict_pickle(items, protocol=2):
    body = b"".join(unicode(key) + value for key, value in items)
    return b"\x80" + bytes([protocol]) + b"}(" + body + b"u."


def write_checkpoint(name, pickle, storages):
    path = os.path.join(HERE, name)
    prefix = name.rsplit(".", 1)[0] + "/"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        def add(record, data):
            archive.writestr(zipfile.ZipInfo(prefix + record, date_time=(1980, 1, 1, 0, 0, 0)), data)
        add("data.pkl", pickle)
        add("byteorder", b"little")
        for key, data in storages.items():
            add("data/" + key, data)
        add("version", b"3\n")


FLOATS4 = struct.pack("<4f", 1.0, 2.0, 3.0, 4.0)

# The payload a text GLOBAL line would carry: "posix" "system", then MARK, the command as a
# UNICODE line, TUPLE, REDUCE, POP, and a UNICODE opcode that swallows the line break the writer
# adds, so the rest of the pickle still reads.
payload = "system\n(V" + "touch " + MARKER + "\ntR0V"
write_checkpoint("stack_global_newline.pt", dict_pickle([
    ("weight", tensor("0", "cuda:1", 4, (4,), (1,))),
    ("trap", stack_global("posix", payload)),
], protocol=4), {"0": FLOATS4})

# What a writer that turned the STACK_GLOBAL into a text GLOBAL line would have written instead
# (the remap before issue 9): the data.pkl of the copy, for the test of the remap's globals check.
with open(os.path.join(HERE, "stack_global_newline.naive-copy.pkl"), "wb") as naive:
    naive.write(dict_pickle([
        ("weight", tensor("0", "cpu", 4, (4,), (1,))),
        ("trap", global_line(b"posix", payload.encode())),
    ]))

write_checkpoint("global_carriage_return.pt", dict_pickle([
    ("weight", tensor("0", "cuda:1", 4, (4,), (1,))),
    ("cls", global_line(b"collections\r", b"OrderedDict")),
]), {"0": FLOATS4})

write_checkpoint("global_not_utf8.pt", dict_pickle([
    ("weight", tensor("0", "cuda:1", 4, (4,), (1,))),
    ("cls", global_line(b"collections\xff", b"OrderedDict")),
]), {"0": FLOATS4})

write_checkpoint("stride_overflow.pt", dict_pickle([
    ("wide", tensor("0", "cpu", 4, (5,), (2**62,))),
    ("tall", tensor("0", "cpu", 4, (2, 3), (2**62, 1))),
    ("fine", tensor("0", "cpu", 4, (2, 2), (2, 1))),
]), {"0": FLOATS4})

write_checkpoint("numel_overflow.pt", dict_pickle([
    ("huge", tensor("0", "cpu", 2**62, (4,), (1,))),
]), {"0": FLOATS4})

HOSTILE_NAMES = [
    "up\x1b[30A\x1b[Jcleared",
    "hidden\x1b[8mtext",
    "line\nbreak",
    "quote'\"\\back",
    "bidi\u202eevil",
    "csi\u009b2J",
    "bell\x07tab\tcr\r",
]
write_checkpoint("hostile_names.pt", dict_pickle(
    [(name, tensor(str(i), "cuda:1", 4, (4,), (1,))) for i, name in enumerate(HOSTILE_NAMES)]
    + [("g", global_line(b"os\x1b[8m", b"system\x1b[2J"))]),
    {str(i): FLOATS4 for i in range(len(HOSTILE_NAMES))})
