// SPDX-License-Identifier: MIT
#pragma once

#include <cstring>
#include <optional>
#include <type_traits>
#include <utility>

namespace ckpt {

// A std::optional of an integer without its padding: the value and its flag in 9 bytes, aligned
// to one, where std::optional<std::uint64_t> is 16. Every value of T stays representable (no
// sentinel: a hostile file may record any offset or size), and the records that hold several
// (StorageRecord's dataOffset and availableBytes, TensorEntry's storageOffset) place them beside
// their other small fields, so each saves 8 bytes a record. It reads like that std::optional,
// except that the value is returned by value (it may lie unaligned), so callers change nothing.
template<typename T> class PackedOptional {
    static_assert(std::is_integral_v<T>);

public:
    using value_type = T;

    constexpr PackedOptional() noexcept = default;
    PackedOptional(std::nullopt_t) noexcept { }
    PackedOptional(T value) noexcept { set(value); }
    PackedOptional(const std::optional<T>& value) noexcept
    {
        if (value)
            set(*value);
    }

    PackedOptional& operator=(std::nullopt_t) noexcept
    {
        reset();
        return *this;
    }
    PackedOptional& operator=(T value) noexcept
    {
        set(value);
        return *this;
    }
    PackedOptional& operator=(const std::optional<T>& value) noexcept
    {
        if (value)
            set(*value);
        else
            reset();
        return *this;
    }

    bool has_value() const noexcept { return m_engaged; }
    explicit operator bool() const noexcept { return m_engaged; }
    T operator*() const noexcept { return get(); }
    T value() const
    {
        if (!m_engaged)
            throw std::bad_optional_access();
        return get();
    }
    template<typename U> T value_or(U&& fallback) const
    {
        return m_engaged ? get() : static_cast<T>(std::forward<U>(fallback));
    }
    void reset() noexcept
    {
        m_engaged = false;
        std::memset(m_bytes, 0, sizeof m_bytes);
    }
    operator std::optional<T>() const noexcept { return m_engaged ? std::optional<T>(get()) : std::nullopt; }

    // Compared as std::optional compares: none equals none and is less than every value.
    friend bool operator==(const PackedOptional& a, const PackedOptional& b) noexcept
    {
        return a.m_engaged == b.m_engaged && (!a.m_engaged || a.get() == b.get());
    }
    friend bool operator==(const PackedOptional& a, std::nullopt_t) noexcept { return !a.m_engaged; }
    friend bool operator==(const PackedOptional& a, const std::optional<T>& b) noexcept
    {
        return a == PackedOptional(b);
    }
    template<typename U>
    requires std::is_arithmetic_v<U>
    friend bool operator==(const PackedOptional& a, const U& b) noexcept
    {
        return a.m_engaged && a.get() == b;
    }
    // The order of std::optional: none is less than every value.
    template<typename U>
    requires std::is_arithmetic_v<U>
    friend bool operator<(const PackedOptional& a, const U& b) noexcept
    {
        return !a.m_engaged || a.get() < b;
    }
    template<typename U>
    requires std::is_arithmetic_v<U>
    friend bool operator<=(const PackedOptional& a, const U& b) noexcept
    {
        return !a.m_engaged || a.get() <= b;
    }
    template<typename U>
    requires std::is_arithmetic_v<U>
    friend bool operator>(const PackedOptional& a, const U& b) noexcept { return a.m_engaged && a.get() > b; }
    template<typename U>
    requires std::is_arithmetic_v<U>
    friend bool operator>=(const PackedOptional& a, const U& b) noexcept
    {
        return a.m_engaged && a.get() >= b;
    }
    template<typename U>
    requires std::is_arithmetic_v<U>
    friend bool operator<(const U& a, const PackedOptional& b) noexcept { return b.m_engaged && a < b.get(); }
    template<typename U>
    requires std::is_arithmetic_v<U>
    friend bool operator<=(const U& a, const PackedOptional& b) noexcept
    {
        return b.m_engaged && a <= b.get();
    }
    template<typename U>
    requires std::is_arithmetic_v<U>
    friend bool operator>(const U& a, const PackedOptional& b) noexcept
    {
        return !b.m_engaged || a > b.get();
    }
    template<typename U>
    requires std::is_arithmetic_v<U>
    friend bool operator>=(const U& a, const PackedOptional& b) noexcept
    {
        return !b.m_engaged || a >= b.get();
    }

private:
    T get() const noexcept
    {
        T value {};
        std::memcpy(&value, m_bytes, sizeof value);
        return value;
    }
    void set(T value) noexcept
    {
        std::memcpy(m_bytes, &value, sizeof value);
        m_engaged = true;
    }

    unsigned char m_bytes[sizeof(T)] {};
    bool m_engaged = false;
};

static_assert(sizeof(PackedOptional<long long>) == sizeof(long long) + 1);
static_assert(alignof(PackedOptional<long long>) == 1);

} // namespace ckpt
