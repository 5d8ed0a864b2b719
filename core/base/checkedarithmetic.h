// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <optional>
#include <type_traits>

namespace ckpt {

// Size arithmetic on numbers read from a file. A hostile file can record a numel, stride, offset
// or ZIP64 field close to 2^64; unchecked, a product or sum wraps and a huge tensor "needs 0
// bytes" (issue 9). Every multiplication and addition of sizes taken from input goes through
// these: an empty result means the true value does not fit the type.
template<class T> [[nodiscard]] constexpr std::optional<T> checkedMultiply(T a, T b)
{
    static_assert(std::is_integral_v<T>);
    T result {};
    if (__builtin_mul_overflow(a, b, &result))
        return std::nullopt;
    return result;
}

template<class T> [[nodiscard]] constexpr std::optional<T> checkedAdd(T a, T b)
{
    static_assert(std::is_integral_v<T>);
    T result {};
    if (__builtin_add_overflow(a, b, &result))
        return std::nullopt;
    return result;
}

template<class T> [[nodiscard]] constexpr std::optional<T> checkedSubtract(T a, T b)
{
    static_assert(std::is_integral_v<T>);
    T result {};
    if (__builtin_sub_overflow(a, b, &result))
        return std::nullopt;
    return result;
}

// Totals that only inform (bytes per device in a plan) stay meaningful when a hostile storage
// claims 2^64 bytes: they stop at the largest value instead of wrapping to a small one.
[[nodiscard]] constexpr std::uint64_t saturatingAdd(std::uint64_t a, std::uint64_t b)
{
    std::uint64_t result = 0;
    return __builtin_add_overflow(a, b, &result) ? UINT64_MAX : result;
}

[[nodiscard]] constexpr std::uint64_t saturatingMultiply(std::uint64_t a, std::uint64_t b)
{
    std::uint64_t result = 0;
    return __builtin_mul_overflow(a, b, &result) ? UINT64_MAX : result;
}

} // namespace ckpt
