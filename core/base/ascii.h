// SPDX-License-Identifier: MIT
#pragma once

namespace ckpt {

// ASCII character tests for parsers of bytes from files. <cctype>'s versions depend on the C
// locale and take an int that must not be a negative char, two traps when the bytes are hostile.

constexpr bool isDigit(char c)
{
    return c >= '0' && c <= '9';
}

// The value of a hexadecimal digit (either case), or -1 when `c` is not one.
constexpr int hexDigit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

} // namespace ckpt
