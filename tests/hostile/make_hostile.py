#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes hostile pickles and checkpoints, opcode by opcode, one or more per technique of
hostile-techniques.md that applies to a static verdict, and a manifest of what the verdict must say.

Every payload is a marker (`touch /tmp/ckpt-hostile-marker-<file>`): if anything ever ran one, the
marker file would appear, and the test fails. NOTHING here is ever loaded with a real unpickler:
the files are built from bytes (struct/zipfile/gzip/...); torch is used only to *write* benign
base checkpoints (torch.save), never to read these files.

usage: make_hostile.py OUTDIR   -> OUTDIR/*.pt|pkl|... and OUTDIR/manifest.tsv
manifest columns: file, technique numbers, expected rating, callables that must be named
(comma-separated substrings of the verdict's unsafe names; '-' for none).
"""
import bz2
import gzip
import io
import lzma
import os
import shutil
import struct
import subprocess
import sys
import zipfile
import zlib

OUT = sys.argv[1]
os.makedirs(OUT, exist_ok=True)
ROWS = []


def marker(tag):
    return "touch /tmp/ckpt-hostile-marker-" + tag


# ---- opcodes ----------------------------------------------------------------------------------
def PROTO(n):
    return b"\x80" + bytes([n])


MARK, STOP, POP, TUPLE, TUPLE1, TUPLE2, REDUCE, BUILD = b"(", b".", b"0", b"t", b"\x85", b"\x86", b"R", b"b"
EMPTY_DICT, EMPTY_LIST, EMPTY_TUPLE, APPEND, SETITEM, NONE = b"}", b"]", b")", b"a", b"s", b"N"
STACK_GLOBAL, MEMOIZE, NEWOBJ, NEWOBJ_EX, OBJ = b"\x93", b"\x94", b"\x81", b"\x92", b"o"


def GLOBAL(module, name):
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def U(text):  # BINUNICODE
    data = text.encode()
    return b"X" + struct.pack("<I", len(data)) + data


def SU(text):  # SHORT_BINUNICODE
    data = text.encode()
    return b"\x8c" + bytes([len(data)]) + data


def S0(text):  # protocol 0 STRING
    return b"S'" + text.encode() + b"'\n"


def BINBYTES(data):
    return b"B" + struct.pack("<I", len(data)) + data


def BINPUT(i):
    return b"q" + bytes([i])


def BINGET(i):
    return b"h" + bytes([i])


def call(module, name, arg):
    """GLOBAL module.name, called with one string: module.name(arg)."""
    return GLOBAL(module, name) + U(arg) + TUPLE1 + REDUCE


def simple(module, name, tag, proto=2):
    return PROTO(proto) + call(module, name, marker(tag)) + STOP


def stack_call(module, name, tag):
    return PROTO(4) + SU(module) + SU(name) + STACK_GLOBAL + SU(marker(tag)) + TUPLE1 + REDUCE + STOP


def benign():
    return PROTO(2) + EMPTY_DICT + U("epoch") + b"K\x03" + SETITEM + STOP


def write(name, data, techniques, names, rating="dangerous"):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)
    ROWS.append((name, techniques, rating, ",".join(names) if names else "-"))


# ---- zip helpers --------------------------------------------------------------------------------
def torch_zip_bytes():
    """A real torch.save zip (benign), written by torch itself."""
    try:
        import torch
    except ImportError:  # pragma: no cover - the CI machine has torch 1.13
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as z:
            z.writestr("archive/data.pkl", benign())
            z.writestr("archive/version", "3\n")
        return buffer.getvalue()
    buffer = io.BytesIO()
    torch.save({"weight": torch.arange(4, dtype=torch.float32)}, buffer)
    return buffer.getvalue()


def zip_with(members, method=zipfile.ZIP_STORED):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", method) as z:
        for name, data in members:
            z.writestr(name, data)
    return bytearray(buffer.getvalue())


def torch_zip_members():
    with zipfile.ZipFile(io.BytesIO(torch_zip_bytes())) as z:
        return [(info.filename, z.read(info.filename)) for info in z.infolist()]


def replace_member(members, suffix, data):
    return [(name, data if name.endswith(suffix) else payload) for name, payload in members]


def patch_all(blob, old, new):
    assert len(old) == len(new)
    assert blob.count(old) >= 1
    return bytearray(bytes(blob).replace(old, new))


def set_flag_bits(blob, member_name, bits):
    """Sets general-purpose flag bits of a member in its local header and central entry."""
    name = member_name.encode()
    at = 0
    while True:
        at = blob.find(b"PK\x03\x04", at)
        if at < 0:
            break
        n = struct.unpack_from("<H", blob, at + 26)[0]
        if bytes(blob[at + 30:at + 30 + n]) == name:
            flags = struct.unpack_from("<H", blob, at + 6)[0]
            struct.pack_into("<H", blob, at + 6, flags | bits)
        at += 4
    at = 0
    while True:
        at = blob.find(b"PK\x01\x02", at)
        if at < 0:
            break
        n = struct.unpack_from("<H", blob, at + 28)[0]
        if bytes(blob[at + 46:at + 46 + n]) == name:
            flags = struct.unpack_from("<H", blob, at + 8)[0]
            struct.pack_into("<H", blob, at + 8, flags | bits)
        at += 4
    return blob


# ---- A. container and parser-differential tricks -----------------------------------------------
write("t01_raw_pickle.pt", simple("os", "system", "t01a"), "1", ["os.system"])
write("t01_raw_posix.bin", simple("posix", "system", "t01b"), "1", ["posix.system"])
write("t01_plain_popen.pkl", simple("subprocess", "Popen", "t01c"), "1", ["subprocess.Popen"])
write("t01_plain_runpy.pkl", simple("runpy", "_run_code", "t01d"), "1", ["runpy._run_code"])

# A pickle with a real torch zip appended: torch.load sees no zip header at byte 0 and unpickles it.
write("t01_pickle_then_zip.pt", simple("os", "system", "t01e") + torch_zip_bytes(), "1,5", ["os.system"])

text_pickle = b"cos\nsystem\n(S'" + marker("t02").encode() + b"'\ntR."
members = torch_zip_members() + [("archive/payload.txt", text_pickle)]
write("t02_zip_txt_member.pt", bytes(zip_with(members)), "2", ["os.system"])
write("t02_zip_data_txt.pt", bytes(zip_with([("data.txt", text_pickle)])), "2", ["os.system"])

inner = simple("builtins", "exec", "t03")
for suffix, packer, expected in (
    ("gz", gzip.compress, "builtins.exec"),
    ("bz2", bz2.compress, "builtins.exec"),
    ("xz", lzma.compress, "builtins.exec"),
):
    write("t03_%s_wrapped.pt" % suffix, packer(inner), "3", [expected])
for tool, args, suffix in (("zstd", ["-q", "-f", "-o"], "zst"), ("7z", None, "7z")):
    if shutil.which(tool) is None:
        continue
    source = os.path.join(OUT, "t03_inner.pkl.tmp")
    with open(source, "wb") as f:
        f.write(inner)
    target = os.path.join(OUT, "t03_%s_wrapped.pt" % suffix)
    if os.path.exists(target):
        os.remove(target)
    if tool == "zstd":
        subprocess.run(["zstd", "-q", "-f", source, "-o", target], check=True)
    else:
        subprocess.run(["7z", "a", "-t7z", "-bso0", "-bsp0", target + ".7z", source], check=True)
        os.replace(target + ".7z", target)
    os.remove(source)
    ROWS.append((os.path.basename(target), "3", "dangerous", "builtins.exec"))
# A zip member wrapped too: the nested route.
write("t03_zip_member_gzip.pt", bytes(zip_with([("archive/data.pkl", gzip.compress(simple("os", "system", "t03z")))])),
      "3", ["os.system"])

evil_data_pkl = simple("builtins", "eval", "t04")
blob = zip_with(replace_member(torch_zip_members(), "data.pkl", evil_data_pkl))
crc = struct.pack("<I", zlib.crc32(evil_data_pkl))
write("t04_bad_crc.pt", bytes(patch_all(blob, crc, struct.pack("<I", zlib.crc32(evil_data_pkl) ^ 0xFFFF))), "4",
      ["builtins.eval"])

blob = zip_with(replace_member(torch_zip_members(), "data.pkl", evil_data_pkl))
central = blob.rfind(b"PK\x01\x02")
at = bytes(blob).find(b"archive/data.pkl", bytes(blob).find(b"PK\x01\x02"))
blob[at:at + 16] = b"archive/datap.kl"
write("t05_central_name_differs.pt", bytes(blob), "5", ["builtins.eval"])
blob = zip_with(replace_member(torch_zip_members(), "data.pkl", evil_data_pkl))
write("t05_flag_encrypted.pt", bytes(set_flag_bits(blob, "archive/data.pkl", 1)), "5", ["builtins.eval"])
blob = zip_with(replace_member(torch_zip_members(), "data.pkl", evil_data_pkl), zipfile.ZIP_DEFLATED)
write("t05_flags_deflated.pt", bytes(set_flag_bits(blob, "archive/data.pkl", 0x40 | 0x1)), "5", ["builtins.eval"])

import warnings

warnings.simplefilter("ignore")
base = torch_zip_members()
write("t06_duplicate_last_evil.pt", bytes(zip_with(base + [("archive/data.pkl", simple("os", "system", "t06a"))])),
      "6", ["os.system"])
evil_first = [("archive/data.pkl", simple("nt", "system", "t06b"))] + base
write("t06_duplicate_first_evil.pt", bytes(zip_with(evil_first)), "6", ["nt.system"])

roots = [(name.replace("archive/", "a/", 1), data) for name, data in base]
roots += [("b/data.pkl", simple("os", "system", "t07")), ("b/version", b"3\n")]
write("t07_two_roots.pt", bytes(zip_with(roots)), "7", ["os.system"])

write("t08_storage_record.pt",
      bytes(zip_with(replace_member(base, "data/0", simple("os", "system", "t08a")))), "8", ["os.system"])
write("t08_extensionless.pt", bytes(zip_with(base + [("archive/.data/payload", simple("os", "popen", "t08b"))])),
      "8", ["os.popen"])
partial = (PROTO(2) + GLOBAL("functools", "partial") + GLOBAL("torch", "load") + U("model.pt") + TUPLE2 + REDUCE
           + EMPTY_TUPLE + REDUCE + STOP)
write("t08_partial_torch_load.pt", bytes(zip_with(replace_member(base, "data.pkl", partial))), "8",
      ["functools.partial", "torch.load"])

legacy = (PROTO(2) + call("builtins", "eval", "0x1950a86a20f9469cfc6c") + STOP  # magic number via eval
          + PROTO(2) + b"M\xe9\x03" + STOP  # protocol version 1001
          + PROTO(2) + EMPTY_DICT + STOP  # sys_info
          + benign()  # main pickle
          + simple("os", "system", "t09"))  # 5th: the "storage keys"
write("t09_magic_eval.pt", legacy, "9", ["builtins.eval", "os.system"])

write("t10_junk_separator.pkl", benign() + b"\xff" + simple("os", "system", "t10a"), "10", ["os.system"])
write("t10_stacked.pkl", benign() + simple("subprocess", "call", "t10b"), "10", ["subprocess.call"])
write("t10_malformed_first.pkl", PROTO(2) + EMPTY_DICT + b"\x00\x00" + simple("os", "system", "t10c"), "10",
      ["os.system"])

write("t11_broken_after_payload.pkl", PROTO(2) + call("os", "system", marker("t11")) + b"\xfe\xfe garbage", "11",
      ["os.system"])

write("t12_bad_utf8_tail.pkl",
      b"cbuiltins\n__import__\n(S'os'\ntR" + b"c\xff\xfe\n\xff\n" + b"0.", "12", ["builtins.__import__"])

# FRAME that ends inside the next opcode: a frame-respecting reader and a linear one disagree.
body = SU("os") + SU("system") + STACK_GLOBAL + SU(marker("t13")) + TUPLE1 + REDUCE + STOP
write("t13_frame_too_short.pkl", PROTO(4) + b"\x95" + struct.pack("<Q", 3) + body, "13", ["os.system"])
write("t13_frame_too_long.pkl", PROTO(4) + b"\x95" + struct.pack("<Q", 4000) + body, "13", ["os.system"])

write("t14_png.pt", b"\x89PNG\r\n\x1a\n" + b"\x00" * 64, "14", [], "no-pickle")
write("t14_html.pt", b"<!DOCTYPE html><html><body>Not found</body></html>\n", "14", [], "no-pickle")
write("t14_lfs_pointer.pt", b"version https://git-lfs.github.com/spec/v1\noid sha256:" + b"0" * 64 + b"\nsize 123\n",
      "14", [], "no-pickle")

write("t15_pt2_opaque.pt2",
      bytes(zip_with([("model/archive_format", b"pt2"), ("model/data/constants/opaque_obj_0",
                                                          simple("os", "system", "t15"))])), "15", ["os.system"])

write("t16_dcp.metadata", simple("shutil", "rmtree", "t16a"), "16", ["shutil.rmtree"])
npy_pickle = PROTO(3) + GLOBAL("ssl", "get_server_certificate") + U("x.example") + b"K\x01" + TUPLE2 + REDUCE + STOP
header = b"{'descr': '|O', 'fortran_order': False, 'shape': (1,), }"
header += b" " * (63 - len(header) % 64) + b"\n"
npy = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header + npy_pickle
write("t16_object_array.npy", npy, "16", ["ssl.get_server_certificate"])
write("t16_object_array.npz", bytes(zip_with([("arr_0.npy", npy)])), "16", ["ssl.get_server_certificate"])

# ---- B. opcode-level obfuscation ----------------------------------------------------------------
write("t17_memo_strings.pkl",
      PROTO(4) + SU("os") + MEMOIZE + SU("system") + MEMOIZE + POP + POP + EMPTY_DICT + POP
      + b"h\x00h\x01" + STACK_GLOBAL + SU(marker("t17")) + TUPLE1 + REDUCE + STOP, "17", ["os.system"])
write("t18_decoys.pkl",
      PROTO(4) + SU("torch._utils") + SU("_rebuild_tensor_v2") + POP + POP + SU("os") + SU("system") + STACK_GLOBAL
      + SU(marker("t18")) + TUPLE1 + REDUCE + STOP, "18", ["os.system"])
write("t19_proto0_strings.pkl",
      PROTO(4) + S0("os") + S0("system") + STACK_GLOBAL + S0(marker("t19")) + TUPLE1 + REDUCE + STOP, "19",
      ["os.system"])
write("t20_memo_keyerror.pkl", PROTO(2) + call("os", "system", marker("t20a")) + b"h\x63" + STOP, "20",
      ["os.system"])
write("t20_type_confusion.pkl", PROTO(2) + call("os", "system", marker("t20b")) + NONE + APPEND + STOP, "20",
      ["os.system"])
write("t21_dotted_pathlib.pkl", stack_call("pathlib", "os.system", "t21a"), "21", ["os.system"])
write("t21_dotted_torch.pkl", stack_call("torch", "os.system", "t21b"), "21", ["os.system"])
write("t22_inst.pkl", b"(S'" + marker("t22a").encode() + b"'\nios\nsystem\n.", "22", ["os.system"])
write("t22_obj_popped.pkl",
      PROTO(1) + MARK + GLOBAL("subprocess", "Popen") + U(marker("t22b")) + OBJ + POP + EMPTY_DICT + STOP, "22",
      ["subprocess.Popen"])
write("t22_newobj_ex.pkl",
      PROTO(4) + SU("subprocess") + SU("Popen") + STACK_GLOBAL + SU(marker("t22c")) + TUPLE1 + EMPTY_DICT
      + NEWOBJ_EX + STOP, "22", ["subprocess.Popen"])
write("t22_newobj.pkl", PROTO(2) + GLOBAL("subprocess", "Popen") + U(marker("t22d")) + TUPLE1 + NEWOBJ + STOP,
      "22", ["subprocess.Popen"])
write("t23_ext1.pkl", PROTO(2) + b"\x82\x42" + U(marker("t23a")) + TUPLE1 + REDUCE + STOP, "23",
      ["copyreg extension code 66"])
write("t23_ext2.pkl", PROTO(2) + b"\x83\x34\x12" + U(marker("t23b")) + TUPLE1 + REDUCE + STOP, "23",
      ["copyreg extension code 4660"])
write("t23_ext4.pkl", PROTO(2) + b"\x84\x78\x56\x34\x12" + U(marker("t23c")) + TUPLE1 + REDUCE + STOP, "23",
      ["copyreg extension code 305419896"])
filler = b"".join(EMPTY_DICT + U("k%d" % i) + b"K\x01" + SETITEM + POP for i in range(200))
write("t24_memo_callable_later.pkl",
      PROTO(2) + GLOBAL("os", "system") + BINPUT(5) + POP + filler + BINGET(5) + U(marker("t24")) + TUPLE1 + REDUCE
      + STOP, "24", ["os.system"])
getattr_chain = (PROTO(2) + GLOBAL("builtins", "getattr") + GLOBAL("builtins", "__import__") + U("os") + TUPLE1
                 + REDUCE + U("system") + TUPLE2 + REDUCE + U(marker("t25a")) + TUPLE1 + REDUCE + STOP)
write("t25_getattr_import.pkl", getattr_chain, "25", ["os.system", "builtins.getattr"])
sour = (b"c__builtin__\neval\n(c__builtin__\ncompile\n(S'__import__(\"os\").system(\"" + marker("t25b").encode()
        + b"\")'\nS''\nS'eval'\ntRtR.")
write("t25_sour_pickles.pkl", sour, "25", ["builtins.eval", "builtins.compile"])
write("t25_apply.pkl", b"c__builtin__\napply\n(cos\nsystem\n(S'" + marker("t25c").encode() + b"'\nttR.", "25",
      ["builtins.apply", "os.system"])
write("t26_build_state_payload.pkl",
      PROTO(2) + GLOBAL("collections", "OrderedDict") + EMPTY_TUPLE + REDUCE + call("os", "system", marker("t26a"))
      + BUILD + STOP, "26", ["os.system"])
write("t26_setitem_on_list.pkl",
      PROTO(2) + EMPTY_LIST + U("k") + call("posix", "system", marker("t26b")) + SETITEM + STOP, "26",
      ["posix.system"])
# Fail-open limits (issue 9): the machine stops at a limit; the verdict must say "cannot verify".
write("t27_marks_100001.pkl", PROTO(2) + MARK * 100001 + call("os", "system", marker("t27a")) + STOP, "27",
      ["os.system"])
write("t27_long4_1100_bytes.pkl",
      PROTO(2) + b"\x8b" + struct.pack("<i", 1100) + b"\x01" * 1100 + POP + call("os", "system", marker("t27b"))
      + STOP, "27", ["os.system"])
write("t27_long_4000_digits.pkl", b"L" + b"7" * 4000 + b"L\n0" + b"cos\nsystem\n(S'" + marker("t27c").encode()
      + b"'\ntR.", "27", ["os.system"])
cycle = (PROTO(2) + EMPTY_LIST + BINPUT(0) + BINGET(0) + APPEND + BINGET(0) + BINGET(0) + APPEND + POP
         + call("os", "system", marker("t29")) + STOP)
write("t29_cycle.pkl", cycle, "29", ["os.system"])

# ---- C. gadgets blocklists missed ----------------------------------------------------------------
gadgets = {  # "module:attribute" as a pickler writes them (dotted attributes via STACK_GLOBAL)
    "30": ["torch._inductor.codecache:compile_file", "torch.utils.bottleneck.__main__:run_cprofile",
           "torch._dynamo.guards:GuardBuilder.get",
           "torch.fx.experimental.symbolic_shapes:ShapeEnv.evaluate_guards_expression",
           "torch.utils.collect_env:run", "torch.utils.data.datapipes.utils.decoder:basichandlers",
           "torch.jit.unsupported_tensor_ops:execWrapper", "torch.utils._config_module:ConfigModule.load_config",
           "torch.serialization:load", "torch.hub:load", "torch.distributed.rpc:rpc_sync"],
    "32": ["operator:itemgetter", "_operator:attrgetter", "functools:partial"],
    "33": ["runpy:_run_code", "bdb:Bdb.run", "pdb:run", "cProfile:runctx", "profile:run", "trace:Trace.runctx",
           "timeit:timeit", "code:InteractiveInterpreter.runcode", "doctest:debug_script", "idlelib.pyshell:main",
           "lib2to3.pgen2.pgen:generate_grammar", "numpy.testing._private.utils:runstring",
           "numpy.f2py.crackfortran:getlincoef", "_xxsubinterpreters:run_string", "imp:load_source",
           "types:CodeType", "cloudpickle.cloudpickle:_make_function", "marshal:loads"],
    "34": ["uuid:_get_command_stdout", "_osx_support:_read_output", "_aix_support:_read_cmd_output",
           "imaplib:IMAP4_stream", "_pyrepl.pager:pipe_pager", "test.support.script_helper:assert_python_ok",
           "asyncio.unix_events:_UnixSubprocessTransport._start", "pty:spawn", "pydoc:pipepager", "pipes:Template",
           "venv:create", "ensurepip:_run_pip", "pip:main"],
    "35": ["distutils.file_util:write_file", "shutil:copy", "shutil:move", "io:FileIO", "logging:FileHandler",
           "urllib.request:urlopen", "http.client:HTTPConnection", "socket:create_connection", "smtplib:SMTP",
           "ssl:get_server_certificate", "ctypes:CDLL", "ctypes:cast"],
    "36": ["fickling.hook:run_hook", "picklescan.scanner:scan_pickle_bytes"],
}
for technique, names in gadgets.items():
    for i, spec in enumerate(names):
        module, name = spec.split(":")
        dotted = module + "." + name
        tag = "t%s_%d" % (technique, i)
        data = stack_call(module, name, tag) if "." in name else simple(module, name, tag)
        write("t%s_%s.pkl" % (technique, dotted.replace(".", "_")), data, technique, [dotted])

inner_evil = simple("os", "system", "t31a")
write("t31_load_from_bytes.pkl",
      PROTO(2) + GLOBAL("torch.storage", "_load_from_bytes") + BINBYTES(inner_evil) + TUPLE1 + REDUCE + STOP, "31",
      ["os.system"])
write("t31_pickle_loads.pkl",
      PROTO(3) + GLOBAL("pickle", "loads") + BINBYTES(simple("posix", "system", "t31b")) + TUPLE1 + REDUCE + STOP,
      "31", ["pickle.loads", "posix.system"])
write("t31_torch_load_bytesio.pkl",
      PROTO(3) + GLOBAL("torch", "load") + GLOBAL("io", "BytesIO")
      + BINBYTES(simple("subprocess", "check_output", "t31c")) + TUPLE1 + REDUCE + TUPLE1 + REDUCE + STOP, "31",
      ["torch.load", "subprocess.check_output"])
write("t31_load_from_bytes_latin1.pkl",
      PROTO(2) + GLOBAL("torch.storage", "_load_from_bytes") + GLOBAL("_codecs", "encode")
      + U(simple("os", "system", "t31d").decode("latin1")) + U("latin1") + TUPLE2 + REDUCE + TUPLE1 + REDUCE + STOP,
      "31", ["os.system"])
write("t31_nested_twice.pkl",
      PROTO(3) + GLOBAL("torch.storage", "_load_from_bytes")
      + BINBYTES(PROTO(3) + GLOBAL("pickle", "loads") + BINBYTES(simple("os", "execv", "t31e")) + TUPLE1 + REDUCE
                 + STOP) + TUPLE1 + REDUCE + STOP, "31", ["os.execv"])
write("t32_resolve_name.pkl",
      PROTO(2) + GLOBAL("pkgutil", "resolve_name") + U("os:system") + TUPLE1 + REDUCE + U(marker("t32a")) + TUPLE1
      + REDUCE + STOP, "32", ["os.system", "pkgutil.resolve_name"])
write("t32_locate_methodcaller.pkl",
      PROTO(2) + GLOBAL("operator", "methodcaller") + U("system") + U(marker("t32b")) + TUPLE2 + REDUCE
      + GLOBAL("pydoc", "locate") + U("os") + TUPLE1 + REDUCE + TUPLE1 + REDUCE + STOP, "32",
      ["os.system", "pydoc.locate", "operator.methodcaller"])
write("t32_attrgetter.pkl",
      PROTO(2) + GLOBAL("operator", "attrgetter") + U("system") + TUPLE1 + REDUCE + GLOBAL("builtins", "__import__")
      + U("os") + TUPLE1 + REDUCE + TUPLE1 + REDUCE + U(marker("t32c")) + TUPLE1 + REDUCE + STOP, "32",
      ["os.system", "operator.attrgetter"])
write("t37_overwrite_module.pkl",
      PROTO(2) + GLOBAL("builtins", "setattr") + MARK + GLOBAL("torch", "_utils") + U("_rebuild_tensor_v2")
      + GLOBAL("os", "system") + TUPLE + REDUCE + STOP, "37", ["builtins.setattr", "os.system"])
write("t38_exception_path.pkl",
      PROTO(2) + GLOBAL("builtins", "ValueError") + call("os", "system", marker("t38")) + TUPLE1 + REDUCE + STOP,
      "38", ["os.system"])
# 39: loaders that retry with weights_only=False after the unpickler refuses: a class torch refuses
# must never read as safe.
write("t39_main_class.pt",
      bytes(zip_with(replace_member(base, "data.pkl",
                                    PROTO(2) + GLOBAL("__main__", "Model") + EMPTY_TUPLE + NEWOBJ + STOP))), "39",
      ["__main__.Model"])
# A real torch.save of the fail-open case: an encrypted (unreadable) data.pkl.
blob = zip_with(replace_member(base, "data.pkl", bytes(range(7, 250))))
write("t27_encrypted_data_pkl.pt", bytes(set_flag_bits(blob, "archive/data.pkl", 1)), "27", [])

# ---- benign counterparts: no false alarms -------------------------------------------------------
write("b_inner_inert_load_from_bytes.pkl",
      PROTO(2) + GLOBAL("torch.storage", "_load_from_bytes") + BINBYTES(benign()) + TUPLE1 + REDUCE + STOP, "31,40",
      [], "needs-allowlisting")
write("b_plain_dict.pkl", benign(), "40", [], "known-inert")
write("b_namespace.pkl", PROTO(2) + GLOBAL("argparse", "Namespace") + EMPTY_TUPLE + REDUCE + EMPTY_DICT + U("lr")
      + b"K\x01" + SETITEM + BUILD + STOP, "40", [], "needs-allowlisting")
write("b_torch_zip.pt", torch_zip_bytes(), "40", [], "known-inert")

# ---- families in their own modules ---------------------------------------------------------------
# Each tests/hostile/families/*.py defines generate(h): h holds this module's helpers (write, GLOBAL,
# U, PROTO, marker, benign, torch_zip_bytes, ...), so a family of techniques lives in one file.
import importlib.util
import types

FAMILIES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "families")
helpers = types.SimpleNamespace(**{k: v for k, v in globals().items() if not k.startswith("__")})
for family in sorted(os.listdir(FAMILIES)) if os.path.isdir(FAMILIES) else []:
    if family.endswith(".py") and not family.startswith("_"):
        spec = importlib.util.spec_from_file_location("hostile_family_" + family[:-3], os.path.join(FAMILIES, family))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module.generate(helpers)

with open(os.path.join(OUT, "manifest.tsv"), "w") as f:
    f.write("file\ttechniques\trating\tcallables\n")
    for row in ROWS:
        f.write("\t".join(row) + "\n")
print("wrote %d files to %s" % (len(ROWS), OUT))
