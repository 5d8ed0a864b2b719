// SPDX-License-Identifier: MIT
#include "core/format/crc32.h"

#include <algorithm>
#include <limits>

#include <zlib.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CKPT_CRC32_FOLDING 1
#include <immintrin.h>
#endif

namespace ckpt {

namespace {

#if CKPT_CRC32_FOLDING

// Folding (Gopal et al., "Fast CRC Computation for Generic Polynomials Using PCLMULQDQ", Intel
// 2009) in the bit-reflected domain of the zip polynomial: a 128-bit lane is carried forward by
// multiplying its halves by x^(n) mod P for the distance n it jumps, then added to the data there.
// The constants are those powers for P = 0x104C11DB7, reflected: 512 and 576 bits for four lanes
// at once, 128 and 192 bits for one, 64 bits for the last step, then P and floor(x^64 / P) for the
// Barrett reduction to 32 bits.
constexpr std::uint64_t kFold512Low = 0x154442bd4, kFold512High = 0x1c6e41596;
constexpr std::uint64_t kFold128Low = 0x1751997d0, kFold128High = 0x0ccaa009e;
constexpr std::uint64_t kFold64 = 0x163cd6124;
constexpr std::uint64_t kPolynomial = 0x1db710641, kBarrettQuotient = 0x1f7011641;

__attribute__((target("pclmul,sse4.1"))) inline __m128i fold(__m128i lane, __m128i constants, __m128i data)
{
    const __m128i low = _mm_clmulepi64_si128(lane, constants, 0x00);
    const __m128i high = _mm_clmulepi64_si128(lane, constants, 0x11);
    return _mm_xor_si128(_mm_xor_si128(low, high), data);
}

__attribute__((target("pclmul,sse4.1"))) inline __m128i load(const std::uint8_t* at)
{
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(at));
}

// `state` is the CRC register (inverted CRC); `length` is a multiple of 16 and at least 64.
__attribute__((target("pclmul,sse4.1"))) std::uint32_t foldedState(
    std::uint32_t state, const std::uint8_t* data, std::size_t length)
{
    __m128i lane0 = _mm_xor_si128(load(data), _mm_cvtsi32_si128(static_cast<int>(state)));
    __m128i lane1 = load(data + 16), lane2 = load(data + 32), lane3 = load(data + 48);
    data += 64;
    length -= 64;

    const __m128i by512
        = _mm_set_epi64x(static_cast<long long>(kFold512High), static_cast<long long>(kFold512Low));
    for (; length >= 64; data += 64, length -= 64) {
        lane0 = fold(lane0, by512, load(data));
        lane1 = fold(lane1, by512, load(data + 16));
        lane2 = fold(lane2, by512, load(data + 32));
        lane3 = fold(lane3, by512, load(data + 48));
    }

    // Four lanes into one, then the remaining 16-byte blocks.
    const __m128i by128
        = _mm_set_epi64x(static_cast<long long>(kFold128High), static_cast<long long>(kFold128Low));
    __m128i folded = fold(lane0, by128, lane1);
    folded = fold(folded, by128, lane2);
    folded = fold(folded, by128, lane3);
    for (; length >= 16; data += 16, length -= 16)
        folded = fold(folded, by128, load(data));

    // 128 bits to 64: the low half moves 64 bits forward onto the high half, then the low 32
    // bits of that move 32 bits forward onto the rest.
    const __m128i low32 = _mm_setr_epi32(-1, 0, -1, 0);
    folded = _mm_xor_si128(_mm_srli_si128(folded, 8), _mm_clmulepi64_si128(folded, by128, 0x10));
    const __m128i by64 = _mm_set_epi64x(0, static_cast<long long>(kFold64));
    folded = _mm_xor_si128(
        _mm_srli_si128(folded, 4), _mm_clmulepi64_si128(_mm_and_si128(folded, low32), by64, 0x00));

    // Barrett reduction of the 64-bit remainder to the 32-bit CRC register.
    const __m128i barrett
        = _mm_set_epi64x(static_cast<long long>(kBarrettQuotient), static_cast<long long>(kPolynomial));
    __m128i quotient = _mm_clmulepi64_si128(_mm_and_si128(folded, low32), barrett, 0x10);
    quotient = _mm_clmulepi64_si128(_mm_and_si128(quotient, low32), barrett, 0x00);
    return static_cast<std::uint32_t>(_mm_extract_epi32(_mm_xor_si128(folded, quotient), 1));
}

bool processorFolds()
{
    static const bool folds = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
    return folds;
}

#endif

} // namespace

std::uint32_t crc32UpdatePortable(std::uint32_t crc, const std::uint8_t* data, std::size_t length)
{
    // zlib counts in uInt (32 bits); larger spans are fed in pieces.
    uLong value = crc;
    while (length > 0) {
        const auto chunk = static_cast<uInt>(std::min<std::size_t>(length, std::numeric_limits<uInt>::max()));
        value = ::crc32(value, data, chunk);
        data += chunk;
        length -= chunk;
    }
    return static_cast<std::uint32_t>(value);
}

std::uint32_t crc32Update(std::uint32_t crc, const std::uint8_t* data, std::size_t length)
{
#if CKPT_CRC32_FOLDING
    if (length >= 64 && processorFolds()) {
        const std::size_t bulk = length & ~std::size_t(15);
        crc = ~foldedState(~crc, data, bulk);
        data += bulk;
        length -= bulk;
    }
#endif
    return crc32UpdatePortable(crc, data, length);
}

std::uint32_t crc32Combine(std::uint32_t first, std::uint32_t second, std::uint64_t secondLength)
{
    return static_cast<std::uint32_t>(::crc32_combine(first, second, static_cast<z_off_t>(secondLength)));
}

const char* crc32Engine()
{
#if CKPT_CRC32_FOLDING
    if (processorFolds())
        return "pclmul";
#endif
    return "zlib";
}

} // namespace ckpt
