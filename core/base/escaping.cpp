// SPDX-License-Identifier: MIT
#include "core/base/escaping.h"

#include <algorithm>
#include <cstdio>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

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

namespace {

// Where the run of printable ASCII that starts at `at` ends: sixteen bytes at a time where SSE2 is
// there (every x86-64), a text shorter than that a byte at a time. `info` passes every line of its
// text through here (28 MB for the 160-shard folder), and a byte at a time was a third of
// checkpointToText.
std::size_t printableRunEnd(std::string_view text, std::size_t at)
{
    const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
    const std::size_t size = text.size();
#ifdef __SSE2__
    const __m128i below = _mm_set1_epi8(0x20), del = _mm_set1_epi8(0x7f);
    // A bit for each of the sixteen bytes from `start` that is not printable ASCII.
    const auto specialBytes = [&](std::size_t start) {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes + start));
        // Signed: bytes from 0x80 are negative, so "below 0x20" flags them with the controls.
        const __m128i special = _mm_or_si128(_mm_cmplt_epi8(v, below), _mm_cmpeq_epi8(v, del));
        return static_cast<unsigned>(_mm_movemask_epi8(special));
    };
    while (size - at >= 16) {
        if (const unsigned mask = specialBytes(at))
            return at + static_cast<std::size_t>(__builtin_ctz(mask));
        at += 16;
    }
    // The last few bytes as the sixteen that end the text, the bits of those before `at` dropped:
    // every line of `info` ends in a part block, up to fifteen steps a byte at a time.
    if (at < size && size >= 16) {
        const std::size_t blockStart = size - 16;
        const unsigned mask = specialBytes(blockStart) >> (at - blockStart);
        return mask ? at + static_cast<std::size_t>(__builtin_ctz(mask)) : size;
    }
#endif
    while (at < size && bytes[at] >= 0x20 && bytes[at] < 0x7F)
        ++at;
    return at;
}

} // namespace

void appendPrintableText(std::string& out, std::string_view text)
{
    char buffer[16];
    for (std::size_t i = 0; i < text.size();) {
        // A run of printable ASCII (almost every name) is appended whole: no character of it is a
        // control, and decoding it a code point at a time was a sixth of `info` of 100,000 tensors.
        std::size_t plain = printableRunEnd(text, i);
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
    const std::size_t special = printableRunEnd(text, from);
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
