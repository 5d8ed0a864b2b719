#pragma once

#include "bytes.h"
#include "expected.h"

namespace ckpt {

// Raw DEFLATE (zip method 8, no zlib header) through zlib. Refuses to produce more than
// expectedSize bytes, so a hostile record cannot balloon in memory.
Expected<ByteBuffer> inflateRaw(ByteView compressed, std::uint64_t expectedSize);

// Standard CRC-32 (zip's), through zlib.
std::uint32_t crc32Of(ByteView bytes);

} // namespace ckpt
