// SPDX-License-Identifier: MIT
#pragma once

#include "core/base/bytes.h"
#include "core/base/expected.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace ckpt {

// Raw DEFLATE (zip method 8, no zlib header) through zlib. Refuses to produce more than
// expectedSize bytes, so a hostile record cannot balloon in memory.
Expected<ByteBuffer> inflateRaw(ByteView compressed, std::uint64_t expectedSize);

// The same stream inflated piece by piece (pieces of at most 1 MiB, in order) into `sink`, so memory
// stays flat however large the record: a deflated storage is checked, hashed or copied this way.
// Fails, with inflateRaw's words, when the stream is corrupt, cut off, or inflates to other than
// expectedSize bytes; a sink's error stops it and is returned. With `stopAfter`, only the first
// stopAfter bytes are wanted: it stops there without reading the rest of the stream.
Status inflateRawChunks(ByteView compressed, std::uint64_t expectedSize,
    const std::function<Status(ByteView)>& sink, std::uint64_t stopAfter = UINT64_MAX);

// Standard CRC-32 (zip's), through crc32.h (carry-less multiplication where the processor has it).
std::uint32_t crc32Of(ByteView bytes);

// CRC-32 of `length` bytes of a file from `offset`, read with pread into small fixed buffers (so
// memory does not grow with the range) and split across up to `threads` threads, whose partial
// CRCs are joined with crc32Combine. Fails with the errno text when the file cannot be read.
Expected<std::uint32_t> crc32OfFileRange(
    int fd, std::uint64_t offset, std::uint64_t length, unsigned threads = 0);

struct FileRange {
    std::uint64_t offset = 0, length = 0;
};
// The CRC-32 of each range, in order, as crc32OfFileRange computes it; the ranges are cut into
// pieces that up to `threads` threads (0: the cores, at most four) take in turn, so many
// storages of a copy are checked on every core at once.
Expected<std::vector<std::uint32_t>> crc32OfFileRanges(
    int fd, const std::vector<FileRange>& ranges, unsigned threads = 0);

} // namespace ckpt
