// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace ckpt {

// Numbers and sizes in messages are for people: "1,234,567", "1.50 MiB".
std::string formatThousands(std::uint64_t value);
std::string formatBytes(std::uint64_t bytes);
// Appends what formatBytes returns.
void appendBytes(std::string& out, std::uint64_t bytes);
// Appends a shape or any list of integers the way torch prints a size: "[256, 384]", "[]".
void appendIntegerList(std::string& out, std::span<const std::int64_t> values);
// Appends a Unicode code point (at most 0x10FFFF) as UTF-8.
void appendUtf8(std::string& out, std::uint32_t codePoint);
// `text` without terminal escape sequences (CSI "ESC [ ... final byte", and a lone ESC): torch's
// weights-only message carries "\033[1m...\033[0m" for bold.
std::string stripAnsiEscapes(std::string_view text);
// Why Python's bytes.decode('utf-8') refuses `bytes`, in its words ("'utf-8' codec can't decode byte
// 0xe9 in position 3: invalid continuation byte"); nullopt when they are valid UTF-8.
std::optional<std::string> pythonUtf8DecodeError(std::string_view bytes);

} // namespace ckpt
