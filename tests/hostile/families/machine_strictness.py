# SPDX-License-Identifier: MIT
"""Family: the machine stricter than CPython (issue 24).

Protocol-0 pickles (no PROTO, so a reader that gives up early calls them "no pickle") that CPython
loads, in _pickle or pickle.py, 3.11 or 3.14, with a construct the machine once refused *before* the
payload: integer text in the forms int(x, 0), int(x), strtol or PyLong_FromString accept; memo keys
written that way or wider than 64 bits; APPEND(S)/SETITEM(S)/ADDITEMS/BUILD on values that are not
lists, dicts or objects. The payload's STACK_GLOBAL takes its strings from the memo through keys
written unlike their PUTs, so a stackless pass cannot name it either: only a machine that reads
what CPython reads names os.system. Each was found or confirmed by tests/tools/pickle_differential.py.
"""


def generate(h):
    def V(text):  # protocol 0 UNICODE
        return b"V" + text.encode() + b"\n"

    def payload(tag, put_os, put_system, get_os, get_system):
        """os.system(marker) with both names stored and fetched through the memo."""
        return (V("") + b"0" + V("os") + b"p" + put_os + b"\n0" + V("system") + b"p" + put_system + b"\n0"
                + V("") + b"0" + V("") + b"0"
                + b"g" + get_os + b"\n" + b"g" + get_system + b"\n" + b"\x93"
                + V(h.marker(tag)) + b"\x85R.")

    def plain(tag):
        return payload(tag, b"1", b"2", b"01", b"002")

    cases = {
        # integer text
        "m_int_hex": b"I0x1f\n0",  # int(x, 0): pickle.py and _pickle up to 3.13
        "m_int_underscores": b"I1_000\n0",
        "m_int_spaces": b"I 12 \n0",
        "m_int_octal_c": b"I 010\n0",  # strtol base 0: 8 in _pickle 3.11, 10 in 3.14
        "m_int_nul_terminated": b"I7\x00junk\n0",  # _pickle reads a C string
        "m_int_wide_hex": b"I0x" + b"f" * 40 + b"\n0",
        "m_long_hex_L": b"L0x10L\n0",
        "m_long_sign_space": b"L +5L\n0",
        "m_long_wide_binary": b"L0b" + b"1" * 200 + b"\n0",
        # memo keys
        "m_memo_key_wide": b"N" + b"p99999999999999999999999\n0" + b"g99999999999999999999999\n0",
        "m_memo_key_plus": b"Np+7\n0g7\n0",
        "m_memo_key_nul": b"Np8\x00x\n0g8\n0",  # _pickle only
        # opcodes on values of other types
        "m_build_none_on_int": b"K\x05Nb0",
        "m_build_pair_on_str": V("x") + b"NN\x86b0",
        "m_build_empty_dict_on_tuple": b")}b0",  # pickle.py skips a false state
        "m_appends_empty_on_int": b"K\x05(e0",
        "m_setitems_empty_on_str": V("x") + b"(u0",
        "m_additems_empty_on_tuple": b")(\x900",
        "m_setitem_on_list": b"(K\x01lK\x00K\x02s0",
        "m_append_to_bytearray": b"\x96\x01\x00\x00\x00\x00\x00\x00\x00aK\x05a0",
        "m_setitem_on_bytearray": b"\x96\x01\x00\x00\x00\x00\x00\x00\x00aK\x00K\x05s0",
    }
    for name, prefix in cases.items():
        h.write(name + ".pkl", prefix + plain(name), "41", ["os.system"])
    # Memo keys in forms the PUT did not use: int(' 1') == int('+1') == int('0_1') == 1.
    h.write("m_memo_keys_spaced.pkl", payload("m_memo_keys_spaced", b" 1", b"2 ", b"+1", b"0_2"), "41",
            ["os.system"])
    h.write("m_memo_keys_nul.pkl", payload("m_memo_keys_nul", b"1\x00a", b"2", b"1", b"2\x00b"), "41",
            ["os.system"])
    # Past one of the machine's own limits (100,001 MARKs) CPython reads on: the stackless pass
    # that names what the machine did not reach must read memo keys as CPython does too.
    h.write("m_marks_then_memo_keys.pkl", b"(" * 100001 + payload("m_marks_then_memo_keys", b" 1", b"2", b"+01", b"0_2"),
            "41", ["os.system"])
    # A FRAME that ends one byte into a string's bytes: Python 3.11's _pickle, reading a BytesIO (as
    # torch.load reads a zip's data.pkl), drops that byte and reads the string, and all that
    # follows, from after the frame: os.system. pickle.py and 3.14's _pickle stop at the frame's end;
    # read without frames the bytes are 'Xo' and then a SETITEM that fails.
    h.write("m_frame_short_c311.pkl", b"\x80\x04\x95" + (3).to_bytes(8, "little") + b"\x8c\x02Xos"
            + b"\x8c\x06system\x93" + h.U(h.marker("m_frame_short_c311")) + b"\x85R.", "41", ["os.system"])
