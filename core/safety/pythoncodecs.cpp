// SPDX-License-Identifier: MIT
// Python's text encoders for the verdict's nested hand-offs (pythoncodecs.h). The lookup and the
// results were checked against CPython 3.11 and 3.14, whose alias tables agree for these codecs.
#include "core/safety/pythoncodecs.h"

#include "core/base/textformat.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>

namespace ckpt {

namespace {

// encodings.aliases for the codecs reproduced here, and for the bytes-to-bytes codecs the verdict
// undoes itself (base64, zlib, bz2) or names (hex); the same in CPython 3.11 and 3.14.
constexpr std::array<std::pair<std::string_view, std::string_view>, 46> kAliases {{
    {"646", "ascii"},
    {"base64", "base64_codec"},
    {"base_64", "base64_codec"},
    {"bz2", "bz2_codec"},
    {"hex", "hex_codec"},
    {"zip", "zlib_codec"},
    {"zlib", "zlib_codec"},
    {"8859", "latin_1"},
    {"ansi_x3.4_1968", "ascii"},
    {"ansi_x3.4_1986", "ascii"},
    {"ansi_x3_4_1968", "ascii"},
    {"cp367", "ascii"},
    {"cp65001", "utf_8"},
    {"cp819", "latin_1"},
    {"csascii", "ascii"},
    {"csisolatin1", "latin_1"},
    {"ibm367", "ascii"},
    {"ibm819", "latin_1"},
    {"iso646_us", "ascii"},
    {"iso8859", "latin_1"},
    {"iso8859_1", "latin_1"},
    {"iso_646.irv_1991", "ascii"},
    {"iso_8859_1", "latin_1"},
    {"iso_8859_1_1987", "latin_1"},
    {"iso_ir_100", "latin_1"},
    {"iso_ir_6", "ascii"},
    {"l1", "latin_1"},
    {"latin", "latin_1"},
    {"latin1", "latin_1"},
    {"u16", "utf_16"},
    {"u32", "utf_32"},
    {"u8", "utf_8"},
    {"unicodebigunmarked", "utf_16_be"},
    {"unicodelittleunmarked", "utf_16_le"},
    {"us", "ascii"},
    {"us_ascii", "ascii"},
    {"utf", "utf_8"},
    {"utf16", "utf_16"},
    {"utf32", "utf_32"},
    {"utf8", "utf_8"},
    {"utf8_ucs2", "utf_8"},
    {"utf8_ucs4", "utf_8"},
    {"utf_16be", "utf_16_be"},
    {"utf_16le", "utf_16_le"},
    {"utf_32be", "utf_32_be"},
    {"utf_32le", "utf_32_le"},
}};

// Modules of the encodings package that encode as implemented below.
constexpr std::array<std::string_view, 12> kReproduced {"ascii", "latin_1", "iso8859_1", "utf_8", "utf_8_sig",
    "utf_16", "utf_16_le", "utf_16_be", "utf_32", "utf_32_le", "utf_32_be", "raw_unicode_escape"};

bool isAsciiAlnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// codecs.lookup lower-cases the name; encodings.normalize_encoding then folds every run of
// characters other than letters, digits and '.' into one '_' between words.
std::string normalizeEncoding(std::string_view name)
{
    std::string out;
    bool punctuation = false;
    for (char c : name) {
        if (isAsciiAlnum(c) || c == '.') {
            if (punctuation && !out.empty())
                out += '_';
            out += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
            punctuation = false;
        } else {
            punctuation = true;
        }
    }
    return out;
}

std::string_view aliasOf(std::string_view normalized)
{
    for (const auto& [alias, module] : kAliases)
        if (alias == normalized)
            return module;
    return {};
}

bool isSurrogate(char32_t c)
{
    return c >= 0xD800 && c <= 0xDFFF;
}

void appendUnit(std::string& out, std::uint32_t unit, int bytes, bool bigEndian)
{
    for (int i = 0; i < bytes; ++i) {
        const int shift = 8 * (bigEndian ? bytes - 1 - i : i);
        out += static_cast<char>((unit >> shift) & 0xFF);
    }
}

std::string hexCodePoint(char32_t c)
{
    char buffer[16];
    if (c < 0x10000)
        std::snprintf(buffer, sizeof buffer, "\\u%04x", static_cast<unsigned>(c));
    else
        std::snprintf(buffer, sizeof buffer, "\\U%08x", static_cast<unsigned>(c));
    return buffer;
}

} // namespace

std::optional<std::u32string> decodePickleText(std::string_view utf8)
{
    std::u32string out;
    out.reserve(utf8.size());
    for (std::size_t i = 0; i < utf8.size();) {
        const auto c = static_cast<unsigned char>(utf8[i]);
        int length = 0;
        char32_t value = 0;
        if (c < 0x80) {
            out += static_cast<char32_t>(c);
            ++i;
            continue;
        } else if (c >= 0xC2 && c <= 0xDF) {
            length = 2, value = c & 0x1F;
        } else if (c >= 0xE0 && c <= 0xEF) {
            length = 3, value = c & 0x0F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            length = 4, value = c & 0x07;
        } else {
            return std::nullopt;
        }
        if (utf8.size() - i < static_cast<std::size_t>(length))
            return std::nullopt;
        for (int k = 1; k < length; ++k) {
            const auto next = static_cast<unsigned char>(utf8[i + k]);
            if ((next & 0xC0) != 0x80)
                return std::nullopt;
            value = (value << 6) | (next & 0x3F);
        }
        // Overlong forms and code points past U+10FFFF fail; surrogates pass ('surrogatepass').
        if ((length == 3 && value < 0x800) || (length == 4 && (value < 0x10000 || value > 0x10FFFF)))
            return std::nullopt;
        out += value;
        i += length;
    }
    return out;
}

std::u32string decodeLatin1(std::string_view bytes)
{
    std::u32string out;
    out.reserve(bytes.size());
    for (char c : bytes)
        out += static_cast<char32_t>(static_cast<unsigned char>(c));
    return out;
}

std::string pythonCodecModule(std::string_view encoding)
{
    const std::string normalized = normalizeEncoding(encoding);
    std::string_view aliased = aliasOf(normalized);
    if (aliased.empty()) {
        std::string underscored = normalized;
        std::replace(underscored.begin(), underscored.end(), '.', '_');
        aliased = aliasOf(underscored);
    }
    // encodings.search_function tries the alias, then the name itself, as a module of the
    // encodings package; a name with a '.' is never a module there.
    for (const std::string_view candidate : {aliased, std::string_view(normalized)}) {
        if (candidate.empty() || candidate.find('.') != std::string_view::npos)
            continue;
        return std::string(candidate);
    }
    return {};
}

PythonEncoding pythonEncode(std::u32string_view text, std::string_view encoding, std::string_view errors)
{
    PythonEncoding result;
    if (encoding.find('\0') != std::string_view::npos) {
        result.outcome = PythonEncoding::Outcome::Raises;
        result.why = "ValueError: embedded null character in the encoding name";
        return result;
    }
    if (std::any_of(
            encoding.begin(), encoding.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x80; })) {
        result.why = "the encoding name '" + std::string(encoding)
            + "' has characters outside ASCII, which Python's lookup treats by Unicode category";
        return result;
    }
    const std::string module = pythonCodecModule(encoding);
    result.codec = module;
    if (module.empty() || std::find(kReproduced.begin(), kReproduced.end(), module) == kReproduced.end()) {
        result.why = module.empty() ? "no codec of Python's standard library is named '"
                + std::string(encoding) + "' (a LookupError, unless some imported package registers one)"
                                    : "encoding '" + std::string(encoding) + "' is Python's " + module
                + " codec, which the scanner does not reproduce (or a module no standard codec has)";
        return result;
    }

    std::string& out = result.bytes;
    const bool utf16 = module.starts_with("utf_16");
    const bool utf32 = module.starts_with("utf_32");
    const bool bigEndian = module.ends_with("_be");
    if (module == "utf_8_sig")
        out += "\xEF\xBB\xBF";
    if (module == "utf_16")
        out += "\xFF\xFE";
    if (module == "utf_32")
        out += std::string("\xFF\xFE\x00\x00", 4);
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char32_t c = text[i];
        bool encodable = true;
        if (module == "ascii")
            encodable = c < 0x80;
        else if (module == "latin_1" || module == "iso8859_1")
            encodable = c < 0x100;
        else if (module != "raw_unicode_escape")
            encodable = !isSurrogate(c); // utf-8, utf-16, utf-32: 'surrogates not allowed'
        if (!encodable) {
            if (errors == "ignore")
                continue;
            if (errors != "replace") {
                if (errors == "strict") {
                    result.outcome = PythonEncoding::Outcome::Raises;
                    result.why = "UnicodeEncodeError: the " + module + " codec cannot encode character "
                        + hexCodePoint(c) + " at position " + std::to_string(i);
                } else {
                    result.bytes.clear();
                    result.why = "the text has a character " + module
                        + " cannot encode, and the error handler '" + std::string(errors)
                        + "' is not one the scanner reproduces";
                }
                return result;
            }
        }
        const char32_t value = encodable ? c : U'?';
        if (module == "ascii" || module == "latin_1" || module == "iso8859_1") {
            out += static_cast<char>(value);
        } else if (module == "raw_unicode_escape") {
            if (value < 0x100)
                out += static_cast<char>(value);
            else
                out += hexCodePoint(value);
        } else if (utf16) {
            if (value >= 0x10000) {
                const char32_t v = value - 0x10000;
                appendUnit(out, 0xD800 + (v >> 10), 2, bigEndian);
                appendUnit(out, 0xDC00 + (v & 0x3FF), 2, bigEndian);
            } else {
                appendUnit(out, value, 2, bigEndian);
            }
        } else if (utf32) {
            appendUnit(out, value, 4, bigEndian);
        } else {
            appendUtf8(out, value);
        }
    }
    result.outcome = PythonEncoding::Outcome::Bytes;
    return result;
}

} // namespace ckpt
