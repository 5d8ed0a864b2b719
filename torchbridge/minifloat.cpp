// SPDX-License-Identifier: MIT
#include "minifloat.h"

#include <cmath>
#include <limits>

namespace ckpt {

std::optional<Float8Format> float8FormatByName(std::string_view torchName)
{
    if (torchName == "float8_e4m3fn")
        return Float8Format::E4M3FN;
    if (torchName == "float8_e5m2")
        return Float8Format::E5M2;
    if (torchName == "float8_e4m3fnuz")
        return Float8Format::E4M3FNUZ;
    if (torchName == "float8_e5m2fnuz")
        return Float8Format::E5M2FNUZ;
    if (torchName == "float8_e8m0fnu")
        return Float8Format::E8M0FNU;
    return std::nullopt;
}

double decodeFloat8(Float8Format format, std::uint8_t bits)
{
    constexpr double nan = std::numeric_limits<double>::quiet_NaN();
    if (format == Float8Format::E8M0FNU)
        return bits == 0xFF ? nan : std::ldexp(1.0, int(bits) - 127);

    int exponentBits = 4, mantissaBits = 3, bias = 7;
    switch (format) {
    case Float8Format::E4M3FN:
        if ((bits & 0x7F) == 0x7F)
            return nan;
        break;
    case Float8Format::E5M2:
        exponentBits = 5, mantissaBits = 2, bias = 15;
        if ((bits & 0x7C) == 0x7C) {
            if ((bits & 0x03) == 0)
                return (bits & 0x80) ? -std::numeric_limits<double>::infinity()
                                     : std::numeric_limits<double>::infinity();
            return nan;
        }
        break;
    case Float8Format::E4M3FNUZ:
        bias = 8;
        if (bits == 0x80)
            return nan;
        break;
    case Float8Format::E5M2FNUZ:
        exponentBits = 5, mantissaBits = 2, bias = 16;
        if (bits == 0x80)
            return nan;
        break;
    case Float8Format::E8M0FNU:
        break;
    }
    const int exponent = (bits >> mantissaBits) & ((1 << exponentBits) - 1);
    const int mantissa = bits & ((1 << mantissaBits) - 1);
    // Subnormals (exponent 0) have no implicit leading one and the exponent of 1.
    const double magnitude = exponent == 0
        ? std::ldexp(double(mantissa), 1 - bias - mantissaBits)
        : std::ldexp(double((1 << mantissaBits) + mantissa), exponent - bias - mantissaBits);
    return (bits & 0x80) ? -magnitude : magnitude;
}

} // namespace ckpt
