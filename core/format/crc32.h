// SPDX-License-Identifier: MIT
#pragma once

// CRC-32 as zip records it (ISO-HDLC: reflected polynomial 0xEDB88320, pre- and post-inverted),
// the checksum behind every storage of a torch.save file. Checking a copied multi-gigabyte
// checkpoint means computing it over every byte, so the bulk goes through carry-less multiplication
// (PCLMULQDQ folding, four 128-bit lanes) where the processor has it, chosen at run time: the
// build targets x86-64's baseline, which lacks it. Elsewhere, and for the tail of a buffer, zlib's
// crc32 computes the same value.

#include <cstddef>
#include <cstdint>

namespace ckpt {

// Continues `crc` (0 to start) over `length` bytes at `data`, as zlib's crc32(crc, data, length).
std::uint32_t crc32Update(std::uint32_t crc, const std::uint8_t* data, std::size_t length);

// zlib's crc32 alone: the reference the fast path is tested against.
std::uint32_t crc32UpdatePortable(std::uint32_t crc, const std::uint8_t* data, std::size_t length);

// The CRC of two pieces one after the other, from the CRC of each and the length of the second
// (zlib's crc32_combine), so pieces can be checked on separate threads.
std::uint32_t crc32Combine(std::uint32_t first, std::uint32_t second, std::uint64_t secondLength);

// "pclmul" when crc32Update folds with carry-less multiplication on this processor, "zlib"
// otherwise: benchmarks print it next to their figures.
const char* crc32Engine();

} // namespace ckpt
