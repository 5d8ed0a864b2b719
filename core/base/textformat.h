#pragma once

#include <cstdint>
#include <string>

namespace ckpt {

// Numbers and sizes in messages are for people: "1,234,567", "1.50 MiB".
std::string formatThousands(std::uint64_t value);
std::string formatBytes(std::uint64_t bytes);
// Appends a Unicode code point (at most 0x10FFFF) as UTF-8.
void appendUtf8(std::string& out, std::uint32_t codePoint);

} // namespace ckpt
