// SPDX-License-Identifier: MIT
#pragma once

#include "core/base/bytes.h"
#include "core/base/expected.h"

namespace ckpt {

// Raw DEFLATE (zip method 8, no zlib header) through zlib. Refuses to produce more than
// expectedSize bytes, so a hostile record cannot balloon in memory.
Expected<ByteBuffer> inflateRaw(ByteView compressed, std::uint64_t expectedSize);

// Standard CRC-32 (zip's), through zlib.
std::uint32_t crc32Of(ByteView bytes);

// CRC-32 of `length` bytes of a file from `offset`, read with pread into fixed-size buffers (so
// memory does not grow with the range) and split across up to `threads` threads, whose partial
// CRCs are joined with crc32_combine. Fails with the errno text when the file cannot be read.
Expected<std::uint32_t> crc32OfFileRange(
    int fd, std::uint64_t offset, std::uint64_t length, unsigned threads = 0);

} // namespace ckpt
