// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace ckpt {

// An error a person can act on: what went wrong, and where in the file when that helps.
struct ReadError {
    std::string message;
    std::optional<std::uint64_t> offset; // byte offset in the file (or in the record named below)
    std::string record; // zip record or container member, empty when not applicable
};

// A value or the ReadError that explains why there is none. The core's public API returns these
// instead of throwing (GCC 12 has no std::expected yet).
template<class T> class Expected {
public:
    Expected(T value)
        : m_state(std::move(value))
    { }
    Expected(ReadError error)
        : m_state(std::move(error))
    { }

    bool hasValue() const { return m_state.index() == 0; }
    explicit operator bool() const { return hasValue(); }
    T& value() { return std::get<0>(m_state); }
    const T& value() const { return std::get<0>(m_state); }
    T& operator*() { return value(); }
    const T& operator*() const { return value(); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    const ReadError& error() const { return std::get<1>(m_state); }

private:
    std::variant<T, ReadError> m_state;
};

} // namespace ckpt

namespace ckpt {

// The result of an operation that produces nothing but may fail: nullopt means it succeeded.
using Status = std::optional<ReadError>;

inline ReadError makeError(
    std::string message, std::optional<std::uint64_t> offset = std::nullopt, std::string record = {})
{
    return ReadError {std::move(message), offset, std::move(record)};
}

} // namespace ckpt
