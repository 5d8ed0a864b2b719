// SPDX-License-Identifier: MIT
#include "core/base/textformat.h"

#include <charconv>
#include <cstdio>

namespace ckpt {

void appendIntegerList(std::string& out, std::span<const std::int64_t> values)
{
    out += '[';
    char digits[24];
    for (std::size_t i = 0; i < values.size(); ++i) {
        if (i)
            out += ", ";
        out.append(digits, std::to_chars(digits, digits + sizeof digits, values[i]).ptr);
    }
    out += ']';
}

std::string formatThousands(std::uint64_t value)
{
    std::string digits = std::to_string(value);
    std::string out;
    const std::size_t n = digits.size();
    for (std::size_t i = 0; i < n; ++i) {
        out += digits[i];
        if ((n - i - 1) % 3 == 0 && i + 1 < n)
            out += ',';
    }
    return out;
}

std::string formatBytes(std::uint64_t bytes)
{
    std::string out;
    appendBytes(out, bytes);
    return out;
}

void appendBytes(std::string& out, std::uint64_t bytes)
{
    static constexpr std::string_view units[] = {" B", " KiB", " MiB", " GiB", " TiB"};
    char buffer[40];
    if (bytes < 1024) {
        out.append(buffer, std::to_chars(buffer, buffer + sizeof buffer, bytes).ptr);
        out += units[0];
        return;
    }
    double value = static_cast<double>(bytes);
    std::size_t unit = 0;
    while (value >= 1024.0 && unit < 4) {
        value /= 1024.0;
        ++unit;
    }
    // to_chars with a precision writes what printf's "%.2f" writes (the C standard's rounding of
    // the exact binary value), without printf's format parsing and locale: a line per tensor of
    // `info` calls this.
    const int precision = value < 10 ? 2 : value < 100 ? 1 : 0;
    out.append(buffer,
        std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::fixed, precision).ptr);
    out += units[unit];
}

void appendUtf8(std::string& out, std::uint32_t codePoint)
{
    if (codePoint < 0x80) {
        out += static_cast<char>(codePoint);
    } else if (codePoint < 0x800) {
        out += static_cast<char>(0xC0 | (codePoint >> 6));
        out += static_cast<char>(0x80 | (codePoint & 0x3F));
    } else if (codePoint < 0x10000) {
        out += static_cast<char>(0xE0 | (codePoint >> 12));
        out += static_cast<char>(0x80 | ((codePoint >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (codePoint & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (codePoint >> 18));
        out += static_cast<char>(0x80 | ((codePoint >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((codePoint >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (codePoint & 0x3F));
    }
}

std::string stripAnsiEscapes(std::string_view text)
{
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '\x1b') {
            out += text[i];
            continue;
        }
        if (i + 1 < text.size() && text[i + 1] == '[') {
            // Parameter and intermediate bytes (0x20-0x3F), then one final byte (0x40-0x7E).
            std::size_t j = i + 2;
            while (j < text.size() && static_cast<unsigned char>(text[j]) >= 0x20
                && static_cast<unsigned char>(text[j]) <= 0x3F)
                ++j;
            i = j < text.size() ? j : text.size() - 1;
        }
    }
    return out;
}

std::optional<std::string> pythonUtf8DecodeError(std::string_view bytes)
{
    auto hex = [](unsigned char c) {
        char buffer[8];
        std::snprintf(buffer, sizeof buffer, "0x%02x", c);
        return std::string(buffer);
    };
    const std::string codec = "'utf-8' codec can't decode ";
    for (std::size_t i = 0; i < bytes.size();) {
        const auto lead = static_cast<unsigned char>(bytes[i]);
        if (lead < 0x80) {
            ++i;
            continue;
        }
        if (lead < 0xC2 || lead > 0xF4)
            return codec + "byte " + hex(lead) + " in position " + std::to_string(i) + ": invalid start byte";
        const std::size_t length = lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
        // The second byte's range also excludes overlong forms and surrogates (as CPython checks).
        const unsigned char low = lead == 0xE0 ? 0xA0 : lead == 0xF0 ? 0x90 : 0x80;
        const unsigned char high = lead == 0xED ? 0x9F : lead == 0xF4 ? 0x8F : 0xBF;
        for (std::size_t k = 1; k < length; ++k) {
            if (i + k >= bytes.size()) {
                if (k == 1)
                    return codec + "byte " + hex(lead) + " in position " + std::to_string(i)
                        + ": unexpected end of data";
                return codec + "bytes in position " + std::to_string(i) + "-"
                    + std::to_string(bytes.size() - 1) + ": unexpected end of data";
            }
            const auto next = static_cast<unsigned char>(bytes[i + k]);
            if (next < (k == 1 ? low : 0x80) || next > (k == 1 ? high : 0xBF))
                return codec + "byte " + hex(lead) + " in position " + std::to_string(i)
                    + ": invalid continuation byte";
        }
        i += length;
    }
    return std::nullopt;
}

} // namespace ckpt
