// SPDX-License-Identifier: MIT
#pragma once

// Exact decoders for the 8-bit floating dtypes torch 2.x saves and Debian's libtorch 1.13 lacks.
// No libtorch header here, so the GUI can show single values too.
#include <cstdint>
#include <optional>
#include <string_view>

namespace ckpt {

enum class Float8Format {
    E4M3FN, // OCP E4M3: bias 7, no infinities, NaN = S.1111.111 (0x7F, 0xFF), max 448
    E5M2, // OCP E5M2: bias 15, IEEE-like: exponent 31 is ±Inf (mantissa 0) or NaN
    E4M3FNUZ, // bias 8, no infinities, no negative zero: 0x80 is the only NaN, max 240
    E5M2FNUZ, // bias 16, no infinities, no negative zero: 0x80 is the only NaN, max 57344
    E8M0FNU, // OCP MX scale: 2^(bits - 127), no sign, no zero, 0xFF is NaN
};

// The format of a torch dtype name ("float8_e4m3fn", ...), none for other dtypes.
std::optional<Float8Format> float8FormatByName(std::string_view torchName);

// The exact value of one bit pattern (every float8 value is a float32 and a double).
double decodeFloat8(Float8Format format, std::uint8_t bits);

} // namespace ckpt
