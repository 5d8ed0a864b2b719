// SPDX-License-Identifier: MIT
#include "core/base/escaping.h"
#include "core/base/printablerun.h"

#include <algorithm>
#include <cstdio>

namespace ckpt {

Utf8Step decodeUtf8At(std::string_view text, std::size_t position)
{
    const auto byte = [&](std::size_t i) { return static_cast<std::uint8_t>(text[i]); };
    const std::uint8_t lead = byte(position);
    if (lead < 0x80)
        return {lead, 1, true};
    std::size_t length = 0;
    std::uint32_t codePoint = 0;
    std::uint32_t minimum = 0;
    if (lead >= 0xC2 && lead <= 0xDF) {
        length = 2;
        codePoint = lead & 0x1F;
        minimum = 0x80;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
        length = 3;
        codePoint = lead & 0x0F;
        minimum = 0x800;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
        length = 4;
        codePoint = lead & 0x07;
        minimum = 0x10000;
    } else {
        return {lead, 1, false};
    }
    if (position + length > text.size())
        return {lead, 1, false};
    for (std::size_t i = 1; i < length; ++i) {
        const std::uint8_t next = byte(position + i);
        if ((next & 0xC0) != 0x80)
            return {lead, 1, false};
        codePoint = (codePoint << 6) | (next & 0x3F);
    }
    if (codePoint < minimum || codePoint > 0x10FFFF || (codePoint >= 0xD800 && codePoint <= 0xDFFF))
        return {lead, 1, false};
    return {codePoint, length, true};
}

bool isValidUtf8(std::string_view text)
{
    for (std::size_t i = 0; i < text.size();) {
        const Utf8Step step = decodeUtf8At(text, i);
        if (!step.valid)
            return false;
        i += step.length;
    }
    return true;
}

bool isControlCodePoint(std::uint32_t codePoint)
{
    return codePoint < 0x20 || (codePoint >= 0x7F && codePoint <= 0x9F)
        || (codePoint >= 0x202A && codePoint <= 0x202E) || (codePoint >= 0x2066 && codePoint <= 0x2069)
        || codePoint == 0x2028 || codePoint == 0x2029;
}

std::string printableText(std::string_view text)
{
    std::string out;
    out.reserve(text.size());
    appendPrintableText(out, text);
    return out;
}

void appendPrintableText(std::string& out, std::string_view text)
{
    char buffer[16];
    const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
    for (std::size_t i = 0; i < text.size();) {
        // A run of printable ASCII (almost every name) is appended whole: no character of it is a
        // control, and decoding it a code point at a time was a sixth of `info` of 100,000 tensors.
        const std::size_t plain = printableRunEnd(bytes, i, text.size());
        if (plain > i) {
            out.append(text.substr(i, plain - i));
            i = plain;
            continue;
        }
        const Utf8Step step = decodeUtf8At(text, i);
        if (!step.valid) {
            std::snprintf(buffer, sizeof buffer, "\\x%02x", static_cast<unsigned>(step.codePoint));
            out += buffer;
        } else if (!isControlCodePoint(step.codePoint)) {
            out.append(text.substr(i, step.length));
        } else if (step.codePoint == '\n') {
            out += "\\n";
        } else if (step.codePoint == '\r') {
            out += "\\r";
        } else if (step.codePoint == '\t') {
            out += "\\t";
        } else if (step.codePoint <= 0xFF) {
            std::snprintf(buffer, sizeof buffer, "\\x%02x", static_cast<unsigned>(step.codePoint));
            out += buffer;
        } else {
            std::snprintf(buffer, sizeof buffer, "\\u%04x", static_cast<unsigned>(step.codePoint));
            out += buffer;
        }
        i += step.length;
    }
}

void makePrintableFrom(std::string& text, std::size_t from)
{
    const std::size_t special
        = printableRunEnd(reinterpret_cast<const unsigned char*>(text.data()), from, text.size());
    if (special == text.size())
        return;
    // What comes before `special` is printable ASCII, as appendPrintableText leaves it, and its
    // decoding steps end there: the rest escaped on its own gives the bytes the whole would.
    const std::string rest = text.substr(special);
    text.resize(special);
    appendPrintableText(text, rest);
}

std::string printableLines(std::string_view text)
{
    std::string out;
    for (std::size_t start = 0; start <= text.size();) {
        const std::size_t end = std::min(text.find('\n', start), text.size());
        appendPrintableText(out, text.substr(start, end - start));
        if (end < text.size())
            out += '\n';
        start = end + 1;
    }
    return out;
}

} // namespace ckpt
