// SPDX-License-Identifier: MIT
#pragma once
// One UTF-8 validator for the JSON parser and writer (core/json only): what the parser accepts
// and what the writer passes through unescaped must be the same set of byte sequences.
#include <cstddef>

namespace ckpt::jsondetail {

// Length of the well-formed UTF-8 sequence at `p` (Unicode table 3-7), 0 when it is not one:
// overlong forms, encoded surrogates and code points above U+10FFFF are all rejected, so whatever
// passes here can be written back as JSON and read by any strict parser.
inline std::size_t utf8SequenceLength(const unsigned char* p, std::size_t available)
{
    const unsigned char lead = p[0];
    if (lead < 0x80)
        return 1;
    auto continuation = [&](std::size_t i, unsigned char low = 0x80, unsigned char high = 0xBF) {
        return i < available && p[i] >= low && p[i] <= high;
    };
    if (lead >= 0xC2 && lead <= 0xDF)
        return continuation(1) ? 2 : 0;
    if (lead >= 0xE0 && lead <= 0xEF) {
        const unsigned char low = lead == 0xE0 ? 0xA0 : 0x80;
        const unsigned char high = lead == 0xED ? 0x9F : 0xBF;
        return continuation(1, low, high) && continuation(2) ? 3 : 0;
    }
    if (lead >= 0xF0 && lead <= 0xF4) {
        const unsigned char low = lead == 0xF0 ? 0x90 : 0x80;
        const unsigned char high = lead == 0xF4 ? 0x8F : 0xBF;
        return continuation(1, low, high) && continuation(2) && continuation(3) ? 4 : 0;
    }
    return 0;
}

} // namespace ckpt::jsondetail
