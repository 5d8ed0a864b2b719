# SPDX-License-Identifier: MIT
"""Nested hand-offs and contradictions (issue 24).

Nested hand-offs: bytes handed to a nested loader (torch.storage._load_from_bytes, pickle.loads,
_pickle.loads, torch.load(io.BytesIO(...)), pickle.Unpickler(...).load()) built by
_codecs.encode(s, ENCODING), codecs.encode, bytes(s, ENCODING), bytearray(...), s.encode(...) through
getattr or methodcaller, bytes.fromhex. The bytes a loader really gets are made here by Python's own
codecs from the very constants the pickle holds (the generator asserts it), and the callable the
inner pickle reaches is read from those bytes with pickletools.genops (a static disassembly: nothing
is unpickled). Several are built so that reading the text as latin-1 (what the verdict once did for
every encoding) gives a harmless pickle while the named encoding gives the payload.

Contradictions: files on which the weights-only section of `check` once named os.system while the
safety rating said "no pickle" or "known inert" (and `check` exited 2): a pickle the checkpoint
reader runs that the safety scan did not rate (a data.pkl that is also a tar archive, a legacy stream
that is also a tar archive).
"""
import codecs
import pickletools
import struct


def _globals_in(data):
    """The GLOBAL names of a pickle, read statically (pickletools.genops never imports or calls)."""
    names = []
    for opcode, arg, _ in pickletools.genops(data):
        if opcode.name in ("GLOBAL", "INST"):
            names.append(arg.replace(" ", "."))
    return names


def _ascii_call(h, module, name, tag):
    """module.name('touch ...') in protocol 0, every byte ASCII, the result popped."""
    return h.GLOBAL(module, name) + b"(S'" + h.marker(tag).encode() + b"'\ntR0"


def _shifted_utf8_text(h, module, name, tag):
    """A str whose UTF-8 bytes run module.name(...) and whose latin-1 bytes are a harmless pickle.

    BINBYTES swallows n characters 'é' plus the call: 2n bytes in UTF-8 (the 'é's alone), but in
    latin-1 the 'é's are only n bytes, so the call is inside the bytes object there.
    """
    call = _ascii_call(h, module, name, tag)
    n = len(call)
    while any(b >= 0x80 for b in struct.pack("<I", 2 * n)) or (n - len(call)) % 2:
        n += 1
    call += b"N0" * ((n - len(call)) // 2)
    text = "B" + struct.pack("<I", 2 * n).decode("latin1") + "\u00e9" * n + call.decode("ascii") + "N."
    real = text.encode("utf-8")
    assert _globals_in(real) == [module + "." + name], _globals_in(real)
    assert _globals_in(text.encode("latin1")) == []
    return text


def _utf16_text(inner, encoding):
    data = inner + b"N" * (len(inner) % 2)  # even length; a trailing NONE after STOP is never read
    text = data.decode(encoding)
    assert text.encode(encoding) == data
    return text


def _tar_header(name_field, size, typeflag=b"0"):
    """A ustar header whose name field is given bytes (pickle opcodes), checksum computed."""
    header = bytearray(512)
    header[0:len(name_field)] = name_field
    header[100:108] = b"0000644\0"
    header[108:116] = b"0000000\0"
    header[116:124] = b"0000000\0"
    header[124:136] = b"%011o\0" % size
    header[136:148] = b"%011o\0" % 0
    header[148:156] = b" " * 8
    header[156:157] = typeflag
    header[257:263] = b"ustar\0"
    header[263:265] = b"00"
    header[148:156] = b"%06o\0 " % sum(header)
    return bytes(header)


def _pad512(data):
    return data + b"\0" * (-len(data) % 512)


def generate(h):
    # ---- nested hand-offs -------------------------------------------------------------------------
    LFB = h.GLOBAL("torch.storage", "_load_from_bytes")

    def load_from_bytes(argument):
        return h.PROTO(2) + LFB + argument + h.TUPLE1 + h.REDUCE + h.STOP

    def codecs_encode(text, encoding, module="_codecs", errors=None):
        out = h.GLOBAL(module, "encode") + h.U(text) + h.U(encoding)
        if errors is None:
            return out + h.TUPLE2 + h.REDUCE
        return out + h.U(errors) + b"\x87" + h.REDUCE  # TUPLE3

    # UTF-8 under several of the names Python's codec lookup accepts: latin-1 reading is harmless.
    for i, encoding in enumerate(["utf-8", "UTF8", "u8", " Utf_8 ", "cp65001", "utf8_ucs4"]):
        text = _shifted_utf8_text(h, "posix", "system", "h31u%d" % i)
        assert codecs.encode(text, encoding) == text.encode("utf-8")
        h.write("h31_codecs_%s.pkl" % ("utf8_%d" % i), load_from_bytes(codecs_encode(text, encoding)), "31",
                ["posix.system"])
    text = _shifted_utf8_text(h, "subprocess", "getoutput", "h31c")
    h.write("h31_codecs_module_utf8.pkl", load_from_bytes(codecs_encode(text, "utf-8", module="codecs")), "31",
            ["subprocess.getoutput", "codecs.encode"])
    # latin-1 under its aliases: the common case torch.save's protocol 2 writes.
    for i, encoding in enumerate(["latin1", "Latin-1", "ISO-8859-1", "l1", "cp819", "iso8859_1", "8859"]):
        inner = h.simple("os", "system", "h31l%d" % i)
        h.write("h31_codecs_latin1_%d.pkl" % i,
                load_from_bytes(codecs_encode(inner.decode("latin1"), encoding)), "31", ["os.system"])
    # UTF-16 without a BOM, both byte orders; the ignore and replace error handlers.
    for i, encoding in enumerate(["utf-16-le", "UTF_16BE", "unicodelittleunmarked"]):
        inner = h.simple("runpy", "_run_code", "h31w%d" % i)
        h.write("h31_codecs_utf16_%d.pkl" % i, load_from_bytes(codecs_encode(_utf16_text(inner, encoding), encoding)),
                "31", ["runpy._run_code"])
    inner = h.simple("os", "execv", "h31i")
    noisy = "".join(c + "\u0100" for c in inner.decode("latin1"))
    assert codecs.encode(noisy, "latin1", "ignore") == inner
    h.write("h31_codecs_ignore.pkl", load_from_bytes(codecs_encode(noisy, "latin-1", errors="ignore")), "31",
            ["os.execv"])
    # bytes(s, ENC) and bytearray(s, ENC) (both vetted inert), with the shifted UTF-8 text.
    for builder in ("bytes", "bytearray"):
        text = _shifted_utf8_text(h, "os", "popen", "h31" + builder[:5])
        argument = h.GLOBAL("builtins", builder) + h.U(text) + h.U("utf8") + h.TUPLE2 + h.REDUCE
        h.write("h31_%s_text_utf8.pkl" % builder, load_from_bytes(argument), "31", ["os.popen"])
    # bytearray of a list of small ints.
    inner = h.simple("pty", "spawn", "h31list")
    ints = h.EMPTY_LIST + h.MARK + b"".join(b"K" + bytes([b]) for b in inner) + b"e"  # APPENDS
    h.write("h31_bytearray_list.pkl",
            load_from_bytes(h.GLOBAL("builtins", "bytearray") + ints + h.TUPLE1 + h.REDUCE), "31", ["pty.spawn"])
    # s.encode('utf-8') through getattr, and through methodcaller, handed to pickle.loads.
    text = _shifted_utf8_text(h, "os", "system", "h31getattr")
    getattr_encode = (h.PROTO(2) + h.GLOBAL("pickle", "loads") + h.GLOBAL("builtins", "getattr") + h.U(text)
                      + h.U("encode") + h.TUPLE2 + h.REDUCE + h.U("UTF-8") + h.TUPLE1 + h.REDUCE + h.TUPLE1 + h.REDUCE
                      + h.STOP)
    h.write("h31_getattr_encode.pkl", getattr_encode, "31,25", ["os.system", "builtins.getattr", "pickle.loads"])
    text = _shifted_utf8_text(h, "subprocess", "run", "h31mc")
    methodcaller = (h.PROTO(2) + h.GLOBAL("_pickle", "loads") + h.GLOBAL("operator", "methodcaller") + h.U("encode")
                    + h.U("utf_8") + h.TUPLE2 + h.REDUCE + h.U(text) + h.TUPLE1 + h.REDUCE + h.TUPLE1 + h.REDUCE
                    + h.STOP)
    h.write("h31_methodcaller_encode.pkl", methodcaller, "31,32", ["subprocess.run", "_pickle.loads"])
    # str.encode as a dotted STACK_GLOBAL, UTF-16-LE; bytes.fromhex; torch.load(io.BytesIO(...)).
    inner = h.simple("os", "system", "h31strenc")
    str_encode = (h.PROTO(4) + h.GLOBAL("torch.storage", "_load_from_bytes") + h.SU("builtins") + h.SU("str.encode")
                  + h.STACK_GLOBAL + h.U(_utf16_text(inner, "utf-16-le")) + h.U("utf-16-le") + h.TUPLE2 + h.REDUCE
                  + h.TUPLE1 + h.REDUCE + h.STOP)
    h.write("h31_str_encode_utf16.pkl", str_encode, "31,21", ["os.system", "builtins.str.encode"])
    inner = h.simple("shutil", "rmtree", "h31hex")
    fromhex = (h.PROTO(4) + h.GLOBAL("torch", "load") + h.GLOBAL("io", "BytesIO") + h.SU("builtins")
               + h.SU("bytes.fromhex") + h.STACK_GLOBAL + h.U(inner.hex(" ")) + h.TUPLE1 + h.REDUCE + h.TUPLE1
               + h.REDUCE + h.TUPLE1 + h.REDUCE + h.STOP)
    assert bytes.fromhex(inner.hex(" ")) == inner
    h.write("h31_bytes_fromhex.pkl", fromhex, "31", ["shutil.rmtree", "torch.load"])
    # pickle.Unpickler(io.BytesIO(b)).load(), through methodcaller('load').
    inner = h.simple("os", "system", "h31unp")
    unpickler = (h.PROTO(2) + h.GLOBAL("operator", "methodcaller") + h.U("load") + h.TUPLE1 + h.REDUCE
                 + h.GLOBAL("pickle", "Unpickler") + h.GLOBAL("io", "BytesIO") + h.BINBYTES(inner) + h.TUPLE1
                 + h.REDUCE + h.TUPLE1 + h.REDUCE + h.TUPLE1 + h.REDUCE + h.STOP)
    h.write("h31_unpickler_load.pkl", unpickler, "31", ["os.system", "pickle.Unpickler"])
    # Dangerous without the name: a module fetched from sys.modules by name, then its attribute.
    sys_modules = (h.PROTO(2) + h.GLOBAL("builtins", "getattr") + h.GLOBAL("operator", "getitem")
                   + h.GLOBAL("sys", "modules") + h.U("posix") + h.TUPLE2 + h.REDUCE + h.U("system") + h.TUPLE2
                   + h.REDUCE + h.U(h.marker("h25sysmod")) + h.TUPLE1 + h.REDUCE + h.STOP)
    h.write("h25_sys_modules_getitem.pkl", sys_modules, "25", ["posix.system", "sys.modules"])
    sys_modules = (h.PROTO(4) + h.GLOBAL("operator", "attrgetter") + h.U("system") + h.TUPLE1 + h.REDUCE
                   + h.GLOBAL("operator", "itemgetter") + h.U("nt") + h.TUPLE1 + h.REDUCE + h.GLOBAL("sys", "modules")
                   + h.TUPLE1 + h.REDUCE + h.TUPLE1 + h.REDUCE + h.U(h.marker("h25ig")) + h.TUPLE1 + h.REDUCE + h.STOP)
    h.write("h25_sys_modules_itemgetter.pkl", sys_modules, "25", ["nt.system", "operator.itemgetter"])
    # pickle.load / _pickle.load of an io.BytesIO: file loaders, not only bytes loaders.
    for module in ("pickle", "_pickle"):
        inner = h.simple("os", "system", "h31load" + module)
        data = (h.PROTO(3) + h.GLOBAL(module, "load") + h.GLOBAL("io", "BytesIO") + h.BINBYTES(inner) + h.TUPLE1
                + h.REDUCE + h.TUPLE1 + h.REDUCE + h.STOP)
        h.write("h31_%s_load_bytesio.pkl" % module, data, "31", ["os.system", module + ".load"])
    # A Python 2 str (BINSTRING) encoded back with latin-1, as a Python 2 pickler could write it.
    inner = h.simple("os", "system", "h31py2")
    py2 = h.PROTO(2) + LFB + h.GLOBAL("_codecs", "encode") + b"T" + struct.pack("<I", len(inner)) + inner \
        + h.U("latin1") + h.TUPLE2 + h.REDUCE + h.TUPLE1 + h.REDUCE + h.STOP
    h.write("h31_python2_str_latin1.pkl", py2, "31", ["os.system"])
    # Two levels: UTF-16-BE bytes holding a pickle that hands shifted UTF-8 bytes to pickle.loads.
    text = _shifted_utf8_text(h, "os", "system", "h31twice")
    middle = h.PROTO(2) + h.GLOBAL("pickle", "loads") + h.GLOBAL("builtins", "bytes") + h.U(text) + h.U("utf-8") \
        + h.TUPLE2 + h.REDUCE + h.TUPLE1 + h.REDUCE + h.STOP
    h.write("h31_nested_two_encodings.pkl", load_from_bytes(codecs_encode(_utf16_text(middle, "utf-16-be"), "utf-16-be")),
            "31", ["os.system", "pickle.loads"])
    # Decompressed or base64-decoded bytes: zlib (also through _codecs.decode), gzip, bz2, base64.
    import base64
    import bz2
    import gzip
    import zlib
    for tag, module, name, pack in (("zlib", "zlib", "decompress", zlib.compress),
                                    ("gzip", "gzip", "decompress", gzip.compress),
                                    ("bz2", "bz2", "decompress", bz2.compress)):
        inner = h.simple("os", "system", "h31" + tag)
        data = (h.PROTO(3) + h.GLOBAL("pickle", "loads") + h.GLOBAL(module, name) + h.BINBYTES(pack(inner))
                + h.TUPLE1 + h.REDUCE + h.TUPLE1 + h.REDUCE + h.STOP)
        h.write("h31_%s_decompress.pkl" % tag, data, "31,3", ["os.system", module + "." + name])
    inner = h.simple("subprocess", "Popen", "h31zc")
    data = (h.PROTO(3) + LFB + h.GLOBAL("_codecs", "decode") + h.BINBYTES(zlib.compress(inner)) + h.U("ZLIB")
            + h.TUPLE2 + h.REDUCE + h.TUPLE1 + h.REDUCE + h.STOP)
    assert codecs.decode(zlib.compress(inner), "ZLIB") == inner
    h.write("h31_codecs_decode_zlib.pkl", data, "31", ["subprocess.Popen", "_codecs.decode"])
    inner = h.simple("os", "system", "h31b64")
    text = base64.encodebytes(inner).decode("ascii")  # with newlines, which b64decode skips
    assert base64.b64decode(text) == inner
    h.write("h31_base64_b64decode.pkl", load_from_bytes(h.GLOBAL("base64", "b64decode") + h.U(text) + h.TUPLE1 + h.REDUCE),
            "31", ["os.system", "base64.b64decode"])
    # What the verdict cannot tell: a codec it does not reproduce, an encoding that is not a constant.
    inner = h.simple("os", "system", "h31cp")
    h.write("h31_codecs_unknown_codec.pkl", load_from_bytes(codecs_encode(inner.decode("cp1252", "replace"),
                                                                           "cp1252")), "31", [])
    nonconstant = (h.GLOBAL("_codecs", "encode") + h.U(inner.decode("latin1")) + h.GLOBAL("builtins", "str")
                   + h.U("latin1") + h.TUPLE1 + h.REDUCE + h.TUPLE2 + h.REDUCE)
    h.write("h31_codecs_encoding_not_constant.pkl", load_from_bytes(nonconstant), "31", [])
    # Benign: the encoding raises (UnicodeEncodeError), so nothing is handed on.
    inner = h.simple("os", "system", "h31ascii")
    h.write("b_handoff_ascii_raises.pkl", load_from_bytes(codecs_encode(inner.decode("latin1"), "ascii")), "31,40",
            [], "needs-allowlisting")
    # Benign, written by real torch: pickle.dumps of a tensor in protocol 2 writes its storage as
    # torch.storage._load_from_bytes(_codecs.encode(<a torch zip as text>, 'latin1')).
    try:
        import pickle

        import torch
        data = pickle.dumps(torch.arange(6, dtype=torch.float32), protocol=2)
        assert b"_codecs" in data and b"_load_from_bytes" in data
        h.write("b_torch_tensor_pickle_protocol2.pkl", data, "31,40", [], "needs-allowlisting")
    except ImportError:  # pragma: no cover - the CI machine has torch 1.13
        pass
    # What pickle.dump of a tensor writes (issue 26: the reader now reads the torch.save file inside
    # the bytes), with the file's main pickle crafted: a real legacy header (magic number, protocol,
    # sys_info of torch.save(storage, _use_new_zipfile_serialization=False)) followed by a payload
    # where the storage's persistent id would be. The outer pickle is the tensor's own reduce.
    try:
        import io
        import pickletools

        import torch
        buffer = io.BytesIO()
        torch.save(torch.arange(4, dtype=torch.float32).storage(), buffer, _use_new_zipfile_serialization=False)
        real = buffer.getvalue()
        offset = 0
        for _ in range(3):  # magic number, protocol version, sys_info: three pickles of their own
            for opcode, _argument, position in pickletools.genops(real[offset:]):
                if opcode.name == "STOP":
                    offset += position + 1
                    break
        crafted = real[:offset] + h.simple("os", "system", "h31blob")
        outer = (h.PROTO(2) + h.GLOBAL("torch._utils", "_rebuild_tensor_v2") + h.MARK
                 + h.GLOBAL("torch.storage", "_load_from_bytes") + h.BINBYTES(crafted) + h.TUPLE1 + h.REDUCE
                 + b"K\x00" + b"K\x04" + h.TUPLE1 + b"K\x01" + h.TUPLE1 + b"\x89"
                 + h.GLOBAL("collections", "OrderedDict") + h.EMPTY_TUPLE + h.REDUCE + h.TUPLE + h.REDUCE + h.STOP)
        h.write("h31_tensor_blob_payload.pkl", outer, "31", ["os.system"])
    except ImportError:  # pragma: no cover - the CI machine has torch 1.13
        pass

    # ---- contradictions: a pickle the reader runs that the safety scan did not rate ---------------
    # A torch zip whose data.pkl is also a tar archive: the call's GLOBAL and a BINUNICODE are in the
    # tar header's name field, the string runs to the end of the header, and the member's data pops
    # it and calls os.system(marker).
    member = h.POP + h.U(h.marker("h24tar")) + h.TUPLE1 + h.REDUCE + h.STOP
    prefix = h.PROTO(2) + h.GLOBAL("os", "system") + b"X" + struct.pack("<I", 512 - 13 - 5)
    header = _tar_header(prefix, len(member))
    polyglot = _pad512(header + member) + b"\0" * 1024
    assert _globals_in(polyglot) == ["os.system"]
    base = h.torch_zip_members()
    h.write("h24_zip_data_pkl_is_tar.pt", bytes(h.zip_with(h.replace_member(base, "data.pkl", polyglot))), "24",
            ["os.system"])
    # A legacy stream that is also a tar archive: sys_info's key is a string that runs over the tar
    # header, its member and its end blocks; the main pickle after it calls os.system. torch.load of
    # an in-memory copy (io.BytesIO) does not try tarfile and reads the stream.
    magic = h.PROTO(2) + b"\x8a\x0a" + (0x1950A86A20F9469CFC6C).to_bytes(10, "little") + h.STOP
    version = h.PROTO(2) + b"M\xe9\x03" + h.STOP
    tar_member = b"inert\n"
    head = magic + version + h.PROTO(2) + h.EMPTY_DICT + b"X"
    string_length = 512 - len(head) - 4 + len(_pad512(tar_member)) + 1024
    header = _tar_header(head + struct.pack("<I", string_length), len(tar_member))
    stream = (header + _pad512(tar_member) + b"\0" * 1024 + b"K\x01" + h.SETITEM + h.STOP
              + h.simple("os", "system", "h24legacy") + h.PROTO(2) + h.EMPTY_LIST + h.STOP)
    h.write("h24_legacy_stream_is_tar.pt", stream, "24,9", ["os.system"])
