// SPDX-License-Identifier: MIT
#pragma once
// The --dtype of convert and extract: floating tensors written in another float dtype, value by
// value as torch's `tensor.to(dtype)` computes them on the CPU (docs/dtype-cast.md): round to
// nearest, ties to even, subnormals kept, too large values to infinity, float64 through float32
// first (torch converts a double to bfloat16 or float16 that way, so it rounds twice), and NaN as
// torch 2.14's x86 kernels write it.
#include "core/base/bytes.h"
#include "core/base/expected.h"

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace ckpt {

// The dtypes --dtype takes: "bfloat16", "float16", "float32".
bool isFloatCastTarget(std::string_view dtype);
// The dtypes it converts: float64, float32, float16 and bfloat16. Other floating dtypes (float8,
// float4) hold quantized values whose scales live in other tensors and stay as they are; integers,
// bool and complex are not floating.
bool isFloatCastSource(std::string_view dtype);

// Element sizes in bytes of the dtypes above (0 for any other).
std::uint32_t floatCastElementSize(std::string_view dtype);

// Converts `count` little-endian elements of `from` at `in` to `to` at `out` (which must not
// overlap `in`). Both must be a source and a target above (a target is also a source).
void castFloats(
    std::string_view from, std::string_view to, const std::uint8_t* in, std::size_t count, std::uint8_t* out);

// One value's bits, for tests: float32 -> bfloat16 / float16, float64 -> float32, and back.
std::uint16_t float32ToBfloat16Bits(std::uint32_t bits);
std::uint16_t float32ToFloat16Bits(std::uint32_t bits);
std::uint32_t float16ToFloat32Bits(std::uint16_t bits);
std::uint32_t float64ToFloat32Bits(std::uint64_t bits);

// A byte sink that casts what it is given, in pieces of any length (an element split between two
// pieces is carried over), and hands the cast bytes to `out`. `sourceCrc` follows the bytes it was
// given (zlib's CRC-32), so a caller can check them against the input's recorded CRC.
class FloatCastSink {
public:
    using Sink = std::function<Status(ByteView)>;
    FloatCastSink(std::string from, std::string to, Sink out);
    Status operator()(ByteView piece);
    // Fails when the bytes given do not end on a whole element.
    Status finish() const;
    std::uint32_t sourceCrc() const { return m_crc; }

private:
    std::string m_from, m_to;
    std::uint32_t m_inSize = 0, m_outSize = 0;
    Sink m_out;
    std::uint8_t m_carry[8] {};
    std::uint32_t m_carried = 0;
    std::uint32_t m_crc = 0;
    ByteBuffer m_buffer;
};

} // namespace ckpt
