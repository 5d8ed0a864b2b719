// SPDX-License-Identifier: MIT
#pragma once

#include <string>
#include <string_view>
#include <vector>

// Text helpers shared by the devices room's parsers (CUDA_VISIBLE_DEVICES, machine specs, saved
// profiles); not for use outside core/devices.
namespace ckpt::devicetext {

inline std::string_view trimmed(std::string_view text)
{
    const auto isSpace = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
    while (!text.empty() && isSpace(text.front()))
        text.remove_prefix(1);
    while (!text.empty() && isSpace(text.back()))
        text.remove_suffix(1);
    return text;
}

// A value in double quotes, for messages that must show exactly where it starts and ends.
inline std::string quoted(std::string_view text)
{
    return "\"" + std::string(text) + "\"";
}

inline std::vector<std::string_view> splitCommas(std::string_view text)
{
    std::vector<std::string_view> parts;
    std::size_t start = 0;
    while (true) {
        const auto comma = text.find(',', start);
        parts.push_back(
            text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
        if (comma == std::string_view::npos)
            return parts;
        start = comma + 1;
    }
}

} // namespace ckpt::devicetext
