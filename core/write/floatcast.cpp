// SPDX-License-Identifier: MIT
#include "core/write/floatcast.h"

#include "core/format/crc32.h"

#include <bit>
#include <cstring>

namespace ckpt {

namespace {

enum class Kind { None, Float64, Float32, Float16, BFloat16 };

Kind kindOf(std::string_view dtype)
{
    if (dtype == "float64")
        return Kind::Float64;
    if (dtype == "float32")
        return Kind::Float32;
    if (dtype == "float16")
        return Kind::Float16;
    if (dtype == "bfloat16")
        return Kind::BFloat16;
    return Kind::None;
}

std::uint32_t sizeOf(Kind kind)
{
    switch (kind) {
    case Kind::Float64:
        return 8;
    case Kind::Float32:
        return 4;
    case Kind::Float16:
    case Kind::BFloat16:
        return 2;
    case Kind::None:
        break;
    }
    return 0;
}

template<class T> T load(const std::uint8_t* in)
{
    T value = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i)
        value = static_cast<T>(value | (static_cast<T>(in[i]) << (8 * i)));
    return value;
}

template<class T> void store(std::uint8_t* out, T value)
{
    for (std::size_t i = 0; i < sizeof(T); ++i)
        out[i] = static_cast<std::uint8_t>(value >> (8 * i));
}

bool isNan32(std::uint32_t bits)
{
    return (bits & 0x7fffffffU) > 0x7f800000U;
}

// Round to nearest, ties to even, of `value` shifted right by `shift` (1..31).
std::uint32_t shiftRoundEven(std::uint32_t value, unsigned shift)
{
    const std::uint32_t kept = value >> shift;
    const std::uint32_t rest = value & ((1U << shift) - 1);
    const std::uint32_t half = 1U << (shift - 1);
    return rest > half || (rest == half && (kept & 1U)) ? kept + 1 : kept;
}

// float -> bfloat16 from the source's float32 bits; NaN as the caller's kernel writes it.
std::uint16_t roundToBfloat16(std::uint32_t bits, std::uint16_t nan)
{
    if (isNan32(bits))
        return nan;
    // c10::BFloat16's round_to_nearest_even: the bias carries into the exponent where it must
    // (largest finite values to infinity; subnormals stay subnormal).
    const std::uint32_t bias = ((bits >> 16) & 1U) + 0x7fffU;
    return static_cast<std::uint16_t>((bits + bias) >> 16);
}

std::uint32_t bfloat16ToFloat32(std::uint16_t bits)
{
    return static_cast<std::uint32_t>(bits) << 16;
}

} // namespace

std::uint16_t float32ToBfloat16Bits(std::uint32_t bits)
{
    // ATen's vectorized float -> bfloat16 (cvtfp32_bf16) writes every NaN as 0xffff, in 1.13 and
    // 2.14 alike; the scalar c10 path (0x7fc0) is what float16 sources take.
    return roundToBfloat16(bits, 0xffffU);
}

std::uint16_t float32ToFloat16Bits(std::uint32_t bits)
{
    const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000U);
    const std::uint32_t magnitude = bits & 0x7fffffffU;
    if (magnitude > 0x7f800000U) // NaN: quiet, with the payload's top ten bits (F16C's vcvtps2ph)
        return static_cast<std::uint16_t>(sign | 0x7e00U | ((magnitude >> 13) & 0x3ffU));
    if (magnitude >= 0x477ff000U) // 65520 and above (infinity included) round to infinity
        return static_cast<std::uint16_t>(sign | 0x7c00U);
    if (magnitude >= 0x38800000U) { // a normal float16: rebias the exponent, round 13 bits away
        const std::uint32_t rebiased = magnitude - (112U << 23);
        return static_cast<std::uint16_t>(sign | shiftRoundEven(rebiased, 13));
    }
    // Below 2^-14: a float16 subnormal, or zero. The value is m x 2^(e - 150); in units of 2^-24
    // it is m >> (126 - e), rounded.
    const std::uint32_t exponent = magnitude >> 23;
    if (exponent < 102) // below 2^-25: rounds to zero (2^-25 itself is a tie, to even: zero)
        return sign;
    const std::uint32_t mantissa = (magnitude & 0x7fffffU) | 0x800000U;
    return static_cast<std::uint16_t>(sign | shiftRoundEven(mantissa, 126 - exponent));
}

std::uint32_t float16ToFloat32Bits(std::uint16_t bits)
{
    const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000U) << 16;
    const std::uint32_t exponent = (bits >> 10) & 0x1fU;
    std::uint32_t mantissa = bits & 0x3ffU;
    if (exponent == 0x1f) // infinity, or NaN made quiet with its payload (both torches)
        return sign | 0x7f800000U | (mantissa ? 0x400000U | (mantissa << 13) : 0);
    if (exponent != 0)
        return sign | ((exponent + 112) << 23) | (mantissa << 13);
    if (mantissa == 0)
        return sign;
    // A subnormal: normalise it (exact in float32).
    std::uint32_t shifted = 0;
    while (!(mantissa & 0x400U)) {
        mantissa <<= 1;
        ++shifted;
    }
    return sign | ((113 - shifted) << 23) | ((mantissa & 0x3ffU) << 13);
}

std::uint32_t float64ToFloat32Bits(std::uint64_t bits)
{
    const std::uint64_t magnitude = bits & 0x7fffffffffffffffULL;
    if (magnitude > 0x7ff0000000000000ULL) // NaN: quiet, sign and the payload's top bits (cvtsd2ss)
        return static_cast<std::uint32_t>((bits >> 32) & 0x80000000U) | 0x7fc00000U
            | static_cast<std::uint32_t>((magnitude >> 29) & 0x7fffffU);
    // torch's static_cast<float>(double): the processor's conversion, to nearest even.
    return std::bit_cast<std::uint32_t>(static_cast<float>(std::bit_cast<double>(bits)));
}

bool isFloatCastTarget(std::string_view dtype)
{
    return dtype == "bfloat16" || dtype == "float16" || dtype == "float32";
}

bool isFloatCastSource(std::string_view dtype)
{
    return kindOf(dtype) != Kind::None;
}

std::uint32_t floatCastElementSize(std::string_view dtype)
{
    return sizeOf(kindOf(dtype));
}

void castFloats(
    std::string_view from, std::string_view to, const std::uint8_t* in, std::size_t count, std::uint8_t* out)
{
    const Kind source = kindOf(from);
    const Kind target = kindOf(to);
    if (source == target) {
        std::memcpy(out, in, count * sizeOf(source));
        return;
    }
    const std::uint32_t inSize = sizeOf(source);
    const std::uint32_t outSize = sizeOf(target);
    for (std::size_t i = 0; i < count; ++i, in += inSize, out += outSize) {
        // Every conversion goes through float32, as torch's do (float64 rounds there first).
        std::uint32_t bits = 0;
        bool nanFromHalf = false;
        switch (source) {
        case Kind::Float64:
            bits = float64ToFloat32Bits(load<std::uint64_t>(in));
            break;
        case Kind::Float32:
            bits = load<std::uint32_t>(in);
            break;
        case Kind::Float16:
            bits = float16ToFloat32Bits(load<std::uint16_t>(in));
            nanFromHalf = isNan32(bits);
            break;
        case Kind::BFloat16:
            bits = bfloat16ToFloat32(load<std::uint16_t>(in));
            break;
        case Kind::None:
            return;
        }
        switch (target) {
        case Kind::Float32:
            store<std::uint32_t>(out, bits);
            break;
        case Kind::Float16:
            store<std::uint16_t>(out, float32ToFloat16Bits(bits));
            break;
        case Kind::BFloat16:
            // float16 -> bfloat16 runs c10's scalar conversion in both torches: NaN is 0x7fc0.
            store<std::uint16_t>(out, nanFromHalf ? std::uint16_t {0x7fc0} : float32ToBfloat16Bits(bits));
            break;
        case Kind::Float64:
        case Kind::None:
            return;
        }
    }
}

FloatCastSink::FloatCastSink(std::string from, std::string to, Sink out)
    : m_from(std::move(from))
    , m_to(std::move(to))
    , m_inSize(floatCastElementSize(m_from))
    , m_outSize(floatCastElementSize(m_to))
    , m_out(std::move(out))
{ }

Status FloatCastSink::operator()(ByteView piece)
{
    m_crc = crc32Update(m_crc, piece.data(), piece.size());
    m_buffer.clear();
    std::size_t used = 0;
    if (m_carried) {
        while (m_carried < m_inSize && used < piece.size())
            m_carry[m_carried++] = piece[used++];
        if (m_carried < m_inSize)
            return std::nullopt;
        m_buffer.resize(m_outSize);
        castFloats(m_from, m_to, m_carry, 1, m_buffer.data());
        m_carried = 0;
    }
    const std::size_t whole = (piece.size() - used) / m_inSize;
    const std::size_t start = m_buffer.size();
    m_buffer.resize(start + whole * m_outSize);
    castFloats(m_from, m_to, piece.data() + used, whole, m_buffer.data() + start);
    used += whole * m_inSize;
    while (used < piece.size())
        m_carry[m_carried++] = piece[used++];
    if (m_buffer.empty())
        return std::nullopt;
    return m_out(ByteView(m_buffer.data(), m_buffer.size()));
}

Status FloatCastSink::finish() const
{
    if (m_carried)
        return makeError("the bytes of a " + m_from + " tensor do not end on a whole element");
    return std::nullopt;
}

} // namespace ckpt
