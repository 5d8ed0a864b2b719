// SPDX-License-Identifier: MIT
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

namespace ckpt {

// The scan three hot loops share: where a run of printable ASCII (0x20 to 0x7E) ends. The JSON
// writer copies such runs into strings unescaped, the JSON parser copies them out of strings, and
// printableText appends them to terminal text; each stops at the bytes it must treat one by one,
// the controls, DEL and every byte from 0x80 (UTF-8 sequences), plus the `Stops` its format gives
// a meaning ('"' and '\\' in JSON strings). Names and keys are almost always such runs: `info
// --json` of 100,000 tensors passes 66 MB of text through here, an index of 92,000 tensors 7 MB.

namespace printablerun {

// Bytes a run holds, as a table for the last bytes of a run.
template<unsigned char... Stops>
inline constexpr std::array<bool, 256> kInRun = [] {
    std::array<bool, 256> inRun {};
    for (int c = 0x20; c < 0x7f; ++c)
        inRun[static_cast<std::size_t>(c)] = ((c != Stops) && ...);
    return inRun;
}();

#ifdef __SSE2__
// A bit per byte of `v` that ends a run. Signed compares: bytes from 0x80 are negative, so "below
// 0x20" flags them with the controls.
template<unsigned char... Stops> inline unsigned stopMask(__m128i v)
{
    __m128i stops
        = _mm_or_si128(_mm_cmplt_epi8(v, _mm_set1_epi8(0x20)), _mm_cmpeq_epi8(v, _mm_set1_epi8(0x7f)));
    ((stops = _mm_or_si128(stops, _mm_cmpeq_epi8(v, _mm_set1_epi8(static_cast<char>(Stops))))), ...);
    return static_cast<unsigned>(_mm_movemask_epi8(stops));
}
template<unsigned char... Stops> inline unsigned stopMask(const unsigned char* sixteen)
{
    return stopMask<Stops...>(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sixteen)));
}
// Two pieces of `Width` bytes (4 or 8) side by side in one register.
template<class Width> inline __m128i twoPieces(const unsigned char* first, const unsigned char* second)
{
    Width a, b;
    std::memcpy(&a, first, sizeof a);
    std::memcpy(&b, second, sizeof b);
    if constexpr (sizeof(Width) == 8)
        return _mm_set_epi64x(static_cast<long long>(b), static_cast<long long>(a));
    else
        return _mm_set_epi32(0x61616161, 0x61616161, static_cast<int>(b), static_cast<int>(a));
}
#endif

// The scan without SSE2, and the tail of a short text with it (always compiled, so that its test
// runs on every machine, not only where SSE2 is missing).
template<unsigned char... Stops>
inline std::size_t runEndByWords(const unsigned char* bytes, std::size_t at, std::size_t size)
{
    // Eight at a time, the last ones of a text of eight or more as the eight that end it, and the
    // rest of a shorter text (a dtype, a device, a storage key) gathered into one word, filled
    // with a byte that stops nothing: each test flags every byte it looks for, and can flag a
    // byte above (more significant than) a flagged one only, so a word with no flag holds none,
    // and a word with one is read byte by byte.
    constexpr std::uint64_t ones = 0x0101010101010101ull;
    constexpr std::uint64_t highs = 0x8080808080808080ull;
    const auto equalTo = [](std::uint64_t word, unsigned char value) {
        const std::uint64_t x = word ^ (value * ones);
        return (x - ones) & ~x & highs;
    };
    const auto hasStop = [&equalTo](std::uint64_t word) {
        return ((word & highs) | ((word - 0x20 * ones) & ~word & highs) | equalTo(word, 0x7f)
                   | (equalTo(word, Stops) | ... | 0))
            != 0;
    };
    const auto load = [bytes]<class Word>(std::size_t from, Word) {
        Word word;
        std::memcpy(&word, bytes + from, sizeof word);
        return static_cast<std::uint64_t>(word);
    };
    while (size - at >= 8) {
        if (hasStop(load(at, std::uint64_t {})))
            break;
        at += 8;
    }
    if (at == size)
        return size;
    if (const std::size_t left = size - at; left < 8) {
        std::uint64_t word;
        if (size >= 8) // the eight that end the text (a stop before `at` only costs the table)
            word = load(size - 8, std::uint64_t {});
        else if (left >= 4) // its first four and its last four, which may overlap
            word = load(at, std::uint32_t {}) | load(size - 4, std::uint32_t {}) << 32;
        else // its first, middle and last bytes, which may be the same
            word = (0x6161616161616161ull & ~0xFFFFFFull) | bytes[at]
                | std::uint64_t {bytes[at + left / 2]} << 8 | std::uint64_t {bytes[size - 1]} << 16;
        if (!hasStop(word))
            return size;
    }
    while (at < size && printablerun::kInRun<Stops...>[bytes[at]])
        ++at;
    return at;
}

} // namespace printablerun

// Where the run of printable ASCII other than `Stops` that starts at `at` in bytes[0, size) ends
// (`size` when it reaches the end). Sixteen bytes at a time where SSE2 is there (every x86-64),
// the last ones of a text of sixteen or more as the sixteen that end it (read again, never past
// the end), a shorter one in one register too; without SSE2, eight at a time the same way; the
// last three bytes and, without SSE2, where a run stops, by a table.
template<unsigned char... Stops>
inline std::size_t printableRunEnd(const unsigned char* bytes, std::size_t at, std::size_t size)
{
#ifdef __SSE2__
    while (size - at >= 16) {
        if (const unsigned mask = printablerun::stopMask<Stops...>(bytes + at))
            return at + static_cast<std::size_t>(__builtin_ctz(mask));
        at += 16;
    }
    const std::size_t left = size - at;
    if (left == 0)
        return size;
    if (size >= 16) {
        const std::size_t seen = 16 - left; // of the last sixteen, the bytes before `at`
        const unsigned mask = printablerun::stopMask<Stops...>(bytes + size - 16) >> seen;
        return mask ? at + static_cast<std::size_t>(__builtin_ctz(mask)) : size;
    }
    // A shorter text (a dtype, a device, a storage key) as its first and last eight or four bytes
    // in one register, which may overlap; the rest of the register holds 'a', which stops nothing.
    if (left >= 4) {
        const std::size_t width = left >= 8 ? 8 : 4;
        const unsigned mask = left >= 8
            ? printablerun::stopMask<Stops...>(
                printablerun::twoPieces<std::uint64_t>(bytes + at, bytes + size - 8))
            : printablerun::stopMask<Stops...>(
                printablerun::twoPieces<std::uint32_t>(bytes + at, bytes + size - 4));
        if (!mask)
            return size;
        const unsigned firstPiece = mask & ((1u << width) - 1);
        return firstPiece ? at + static_cast<std::size_t>(__builtin_ctz(firstPiece))
                          : size - width + static_cast<std::size_t>(__builtin_ctz(mask >> width));
    }
#endif
    return printablerun::runEndByWords<Stops...>(bytes, at, size);
}

} // namespace ckpt
