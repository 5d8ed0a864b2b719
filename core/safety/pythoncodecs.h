// SPDX-License-Identifier: MIT
#pragma once
// Python's text codecs, as `_codecs.encode(s, ENCODING)`, `codecs.encode`, `str.encode` and
// `bytes(s, ENCODING)` apply them: how a pickle turns a str into the bytes it hands to a nested
// loader (torch.save's protocol 2 writes every bytes object as `_codecs.encode(s, 'latin1')`). The
// safety verdict rates the bytes the call would really produce, so the encoding is looked up the way
// Python's codec registry looks it up (case, punctuation and aliases) and applied with the error
// handler the call names. A codec it does not reproduce is "cannot tell", never a guess.

#include <optional>
#include <string>
#include <string_view>

namespace ckpt {

struct PythonEncoding {
    enum class Outcome {
        Bytes, // `bytes` holds what Python returns
        Raises, // Python raises (`why` says what): the call never returns, nothing is handed on
        Unknown, // the scanner cannot tell (`why` says why): a codec it does not reproduce, ...
    };
    Outcome outcome = Outcome::Unknown;
    std::string bytes;
    std::string codec; // Python's module for it: "latin_1", "utf_8", "utf_16_le", ...
    std::string why;
};

// The str a pickle's BINUNICODE/SHORT_BINUNICODE/UNICODE text stands for, as code points: UTF-8
// decoded the way the unpickler decodes it ('utf-8', 'surrogatepass'); nullopt where that decoder
// fails (and with it the unpickler, before any call that takes the text).
std::optional<std::u32string> decodePickleText(std::string_view utf8);
// A Python 2 str (STRING/BINSTRING) as the unpickler decodes it with encoding='latin1'.
std::u32string decodeLatin1(std::string_view bytes);

// The codec module Python's registry finds for `encoding` (lower-cased, punctuation folded to '_'
// and looked up in encodings.aliases, as encodings.search_function does): "latin_1" for "Latin-1",
// "ISO8859-1" and "l1". Empty when no module of the standard library has that name.
std::string pythonCodecModule(std::string_view encoding);

// `_codecs.encode(text, encoding, errors)`. The codecs reproduced: ascii, latin_1 (and
// iso8859_1), utf_8, utf_8_sig, utf_16 and utf_32 (native order is little-endian: every machine
// torch runs on), their _le/_be forms, raw_unicode_escape; error handlers strict, ignore, replace.
PythonEncoding pythonEncode(std::u32string_view text, std::string_view encoding, std::string_view errors);

} // namespace ckpt
